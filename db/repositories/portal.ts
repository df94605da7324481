import { and, asc, eq, gt, gte, inArray, lt, sql } from 'drizzle-orm';
import type { PortalOperation, PortalRepo, Subscriber, SubscriberStatus, Traffic } from '../../core/portal/ports.ts';
import { type Database, jsonColumn, rowsOf } from '../client.ts';
import { executePrepared, runPrepared } from '../prepared.ts';
import {
  countries,
  incomingUsers,
  portalConnections,
  portalOptions,
  portalPermissions,
  portalSessions,
  portalSubscribers,
  portalTraffic,
} from '../schema.ts';
import { portalBuckets } from './portal-buckets.ts';
import { portalKeys } from './portal-keys.ts';
import { portalTree } from './portal-tree.ts';

type SubscriberRow = typeof portalSubscribers.$inferSelect;
const toSubscriber = ({ passwordHash: _p, tokenHash: _t, status, ...row }: SubscriberRow): Subscriber => ({
  ...row,
  status: status as SubscriberStatus,
});

export const portalRepo = (db: Database): PortalRepo => ({
  async admission(userId, now) {
    // json_agg, not array_agg: JSON needs no type lookup, which per-request clients on Workers skip.
    const rows = await executePrepared(
      db,
      sql`select
        coalesce((select json_object_agg(o.name, o.value) from portal_options o where o.user_id = ${userId}),
          '{}'::json) as options,
        coalesce((select json_agg(a.destination order by a.destination) from incoming_associations a
          where a.user_id = ${userId}), '[]'::json) as destinations,
        coalesce((select json_agg(p.operation order by p.operation) from portal_permissions p
          where p.user_id = ${userId}), '[]'::json) as permissions,
        (select count(*)::int from portal_connections c
          where c.user_id = ${userId} and c.lease_until > ${now.toISOString()}::timestamptz) as connections`,
      'portalAdmission',
    );
    const [row] = rowsOf<{ options: unknown; destinations: unknown; permissions: unknown; connections: number }>(rows);
    return {
      options: jsonColumn<Record<string, string>>(row!.options),
      destinations: jsonColumn<string[]>(row!.destinations),
      permissions: jsonColumn<PortalOperation[]>(row!.permissions),
      connections: Number(row!.connections),
    };
  },
  async permissions(userId) {
    const rows = await runPrepared(
      db
        .select({ operation: portalPermissions.operation })
        .from(portalPermissions)
        .where(eq(portalPermissions.userId, userId))
        .orderBy(asc(portalPermissions.operation)),
      'portalPermissions',
    );
    return rows.map((r) => r.operation as PortalOperation);
  },
  async grant(userId, operations) {
    if (operations.length === 0) return;
    await db
      .insert(portalPermissions)
      .values(operations.map((operation) => ({ userId, operation })))
      .onConflictDoNothing();
  },
  async revoke(userId, operations) {
    if (operations.length === 0) return;
    await db
      .delete(portalPermissions)
      .where(and(eq(portalPermissions.userId, userId), inArray(portalPermissions.operation, [...operations])));
  },
  async options(userId) {
    const rows = await runPrepared(
      db.select().from(portalOptions).where(eq(portalOptions.userId, userId)),
      'portalOptions',
    );
    return Object.fromEntries(rows.map((r) => [r.name, r.value]));
  },
  async setOption(userId, name, value) {
    if (value === null) {
      await db.delete(portalOptions).where(and(eq(portalOptions.userId, userId), eq(portalOptions.name, name)));
      return;
    }
    await db
      .insert(portalOptions)
      .values({ userId, name, value })
      .onConflictDoUpdate({ target: [portalOptions.userId, portalOptions.name], set: { value } });
  },
  async recordLogin(userId, at, address) {
    await db
      .update(incomingUsers)
      .set({ lastLoginDate: at, lastLoginAddress: address })
      .where(eq(incomingUsers.id, userId));
  },
  async lastLogin(userId) {
    const [row] = await db
      .select({ at: incomingUsers.lastLoginDate, address: incomingUsers.lastLoginAddress })
      .from(incomingUsers)
      .where(eq(incomingUsers.id, userId));
    return row?.at ? { at: row.at, address: row.address } : null;
  },

  async addSubscriber(s, at) {
    const rows = await db
      .insert(portalSubscribers)
      .values({ ...s, status: 'unverified', createdAt: at })
      .onConflictDoNothing()
      .returning({ id: portalSubscribers.id });
    return rows[0]?.id ?? null;
  },
  async deleteSubscriber(id) {
    await db.delete(portalSubscribers).where(eq(portalSubscribers.id, id));
  },
  async subscribers(userId) {
    const rows = await db
      .select()
      .from(portalSubscribers)
      .where(eq(portalSubscribers.userId, userId))
      .orderBy(asc(portalSubscribers.id));
    return rows.map(toSubscriber);
  },
  async subscriber(id) {
    const [row] = await db.select().from(portalSubscribers).where(eq(portalSubscribers.id, id));
    return row ? toSubscriber(row) : null;
  },
  async subscriberByToken(tokenHash) {
    const [row] = await db.select().from(portalSubscribers).where(eq(portalSubscribers.tokenHash, tokenHash));
    return row ? toSubscriber(row) : null;
  },
  async activeSubscriberByPassword(userId, passwordHash) {
    const [row] = await db
      .select()
      .from(portalSubscribers)
      .where(
        and(
          eq(portalSubscribers.passwordHash, passwordHash),
          eq(portalSubscribers.userId, userId),
          eq(portalSubscribers.status, 'active'),
        ),
      );
    return row ? toSubscriber(row) : null;
  },
  async changeSubscriber(id, from, to) {
    const stamps =
      to.status === 'verified' ? { verifiedAt: to.at } : to.status === 'active' ? { activatedAt: to.at } : {};
    const rows = await db
      .update(portalSubscribers)
      .set({
        status: to.status,
        ...stamps,
        // Only an active subscriber has a password: one that leaves that status is not kept.
        passwordHash: to.passwordHash ?? null,
        ...(to.clearToken && { tokenHash: null, tokenExpiresAt: null }),
      })
      .where(and(eq(portalSubscribers.id, id), inArray(portalSubscribers.status, [...from])))
      .returning({ id: portalSubscribers.id });
    return rows.length > 0;
  },

  async createSession(tokenHash, session) {
    await db.insert(portalSessions).values({ tokenHash, ...session });
  },
  async session(tokenHash) {
    const [row] = await db.select().from(portalSessions).where(eq(portalSessions.tokenHash, tokenHash));
    return row
      ? {
          userId: row.userId,
          subscriberId: row.subscriberId,
          csrf: row.csrf,
          credential: row.credential,
          lastSeenAt: row.lastSeenAt,
        }
      : null;
  },
  async touchSession(tokenHash, at) {
    await db.update(portalSessions).set({ lastSeenAt: at }).where(eq(portalSessions.tokenHash, tokenHash));
  },
  async deleteSession(tokenHash) {
    await db.delete(portalSessions).where(eq(portalSessions.tokenHash, tokenHash));
  },
  async endIdleSessions(userId, before) {
    await db
      .delete(portalSessions)
      .where(and(eq(portalSessions.userId, userId), lt(portalSessions.lastSeenAt, before)));
  },

  async countries() {
    return db.select({ iso: countries.iso, name: countries.name }).from(countries).orderBy(asc(countries.name));
  },

  async openConnection({ userId, server, protocol, max, now, leaseMs }) {
    const leaseUntil = new Date(now.getTime() + leaseMs);
    if (max < 0) {
      // No limit: nothing to count, so nothing to serialise.
      const [opened] = await runPrepared(
        db
          .insert(portalConnections)
          .values({ userId, server, protocol, startedAt: now, leaseUntil })
          .returning({ id: portalConnections.id }),
        'portalOpenConnection',
      );
      return opened!.id;
    }
    return db.transaction(async (tx) => {
      // The user's row serialises the count and the insert across servers. Downloads that start
      // together wait here in turn, each holding a connection of the pool: the lock is held for as
      // few round trips as can be. The count is made by the insert, a statement of its own run
      // once the lock is granted, so it sees the connections committed before; the two are sent
      // together (postgres.js pipelines them), which spares a round trip and changes no order.
      const at = now.toISOString();
      const [, opened] = await Promise.all([
        runPrepared(
          tx.select({ id: incomingUsers.id }).from(incomingUsers).where(eq(incomingUsers.id, userId)).for('update'),
          'portalLockUser',
        ),
        executePrepared(
          tx as unknown as Database,
          sql`
          insert into portal_connections (user_id, server, protocol, started_at, lease_until)
          select ${userId}, ${server}, ${protocol}, ${at}::timestamptz, ${leaseUntil.toISOString()}::timestamptz
          where (select count(*) from portal_connections where user_id = ${userId} and lease_until > ${at}::timestamptz)
            < ${max}
          returning id`,
          'portalOpenLimitedConnection',
        ),
      ]);
      const row = rowsOf<{ id: string | number }>(opened)[0];
      return row === undefined ? null : Number(row.id);
    });
  },
  async renewConnections(ids, until) {
    if (ids.length === 0) return;
    await db
      .update(portalConnections)
      .set({ leaseUntil: until })
      .where(inArray(portalConnections.id, [...ids]));
  },
  async closeConnection(id) {
    await runPrepared(db.delete(portalConnections).where(eq(portalConnections.id, id)), 'portalCloseConnection');
  },
  async endConnection(id, t) {
    // One round trip at the end of every download: the two changes are independent of each other.
    await executePrepared(
      db,
      sql`with closed as (delete from portal_connections where id = ${id})
        insert into portal_traffic (user_id, minute, protocol, download_bytes, upload_bytes, downloads, uploads)
        values (${t.userId}, ${t.minute.toISOString()}::timestamptz, ${t.protocol}, ${t.downloadBytes},
          ${t.uploadBytes}, ${t.downloads}, ${t.uploads})
        on conflict (user_id, minute, protocol) do update set
          download_bytes = portal_traffic.download_bytes + excluded.download_bytes,
          upload_bytes = portal_traffic.upload_bytes + excluded.upload_bytes,
          downloads = portal_traffic.downloads + excluded.downloads,
          uploads = portal_traffic.uploads + excluded.uploads`,
      'portalEndConnection',
    );
  },
  async connections(userId, now) {
    const [row] = await runPrepared(
      db
        .select({ running: sql<number>`count(*)::int` })
        .from(portalConnections)
        .where(and(eq(portalConnections.userId, userId), gt(portalConnections.leaseUntil, now))),
      'portalConnections',
    );
    return row?.running ?? 0;
  },

  async addTraffic(userId, minute, protocol, t) {
    await runPrepared(
      db
        .insert(portalTraffic)
        .values({ userId, minute, protocol, ...t })
        .onConflictDoUpdate({
          target: [portalTraffic.userId, portalTraffic.minute, portalTraffic.protocol],
          set: {
            downloadBytes: sql`${portalTraffic.downloadBytes} + excluded.download_bytes`,
            uploadBytes: sql`${portalTraffic.uploadBytes} + excluded.upload_bytes`,
            downloads: sql`${portalTraffic.downloads} + excluded.downloads`,
            uploads: sql`${portalTraffic.uploads} + excluded.uploads`,
          },
        }),
      'portalAddTraffic',
    );
  },
  async trafficSince(userId, since) {
    const [row] = await db
      .select({
        downloadBytes: sql<string>`coalesce(sum(${portalTraffic.downloadBytes}), 0)`,
        uploadBytes: sql<string>`coalesce(sum(${portalTraffic.uploadBytes}), 0)`,
        downloads: sql<string>`coalesce(sum(${portalTraffic.downloads}), 0)`,
        uploads: sql<string>`coalesce(sum(${portalTraffic.uploads}), 0)`,
      })
      .from(portalTraffic)
      .where(and(eq(portalTraffic.userId, userId), gte(portalTraffic.minute, since)));
    return numbers(row);
  },
  async trafficSeries(userId, since) {
    const rows = await db
      .select({
        minute: portalTraffic.minute,
        downloadBytes: sql<string>`sum(${portalTraffic.downloadBytes})`,
        uploadBytes: sql<string>`sum(${portalTraffic.uploadBytes})`,
        downloads: sql<string>`sum(${portalTraffic.downloads})`,
        uploads: sql<string>`sum(${portalTraffic.uploads})`,
      })
      .from(portalTraffic)
      .where(and(eq(portalTraffic.userId, userId), gte(portalTraffic.minute, since)))
      .groupBy(portalTraffic.minute)
      .orderBy(asc(portalTraffic.minute));
    return rows.map((r) => ({ minute: r.minute, ...numbers(r) }));
  },

  ...portalTree(db),
  ...portalKeys(db),
  ...portalBuckets(db),
});

const numbers = (row: Record<keyof Traffic, string | number> | undefined): Traffic => ({
  downloadBytes: Number(row?.downloadBytes ?? 0),
  uploadBytes: Number(row?.uploadBytes ?? 0),
  downloads: Number(row?.downloads ?? 0),
  uploads: Number(row?.uploads ?? 0),
});
