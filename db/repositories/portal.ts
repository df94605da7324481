import { and, asc, eq, gt, gte, inArray, lt, type SQL, sql } from 'drizzle-orm';
import type {
  PortalEntry,
  PortalFile,
  PortalOperation,
  PortalRepo,
  Subscriber,
  SubscriberStatus,
  Traffic,
} from '../../core/portal/ports.ts';
import { type Database, rowsOf } from '../client.ts';
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

type SubscriberRow = typeof portalSubscribers.$inferSelect;
const toSubscriber = ({ passwordHash: _p, tokenHash: _t, status, ...row }: SubscriberRow): Subscriber => ({
  ...row,
  status: status as SubscriberStatus,
});

type FileRow = {
  id: string | number;
  data_file_id: string | number;
  target: string;
  status: string;
  source: string;
  size: string | number;
  checksum: string | null;
  created_at: string | Date;
  scheduled_at: string | Date;
  expires_at: string | Date;
  destination_type?: string | null;
};

const toFile = (r: FileRow): PortalFile => ({
  transferId: Number(r.id),
  dataFileId: Number(r.data_file_id),
  path: r.target,
  source: r.source,
  size: Number(r.size),
  checksum: r.checksum,
  modifiedAt: new Date(r.created_at),
  status: r.status,
  scheduledAt: new Date(r.scheduled_at),
  expiresAt: new Date(r.expires_at),
  destinationType: r.destination_type ?? null,
});

const FILE_COLUMNS = sql.raw(
  't.id, t.data_file_id, t.target, t.status, f.source, f.size, f.checksum, f.created_at, t.scheduled_at, t.expires_at',
);
const TARGET = sql`t.target collate "C"`;
/** What the portal's tree shows: not INIT, SCHE or FETC, scheduled, not expired, not deleted. */
const available = (now: Date) => sql`t.status not in ('INIT', 'SCHE', 'FETC')
  and t.scheduled_at <= ${now.toISOString()}::timestamptz and t.expires_at > ${now.toISOString()}::timestamptz
  and f.deleted_at is null`;
// `nulls last` as in the index (data_transfers_portal): a plain `desc` means nulls first, and
// Postgres then sorts the destination's rows rather than read them in the index's order.
const NEWEST_FIRST = sql`order by ${TARGET}, t.id desc nulls last`;

type PathRange = { lower: string | null; inclusive: boolean; upper: string | null };
const lowerBound = (range: PathRange) =>
  range.lower === null
    ? sql``
    : range.inclusive
      ? sql`and ${TARGET} >= ${range.lower}`
      : sql`and ${TARGET} > ${range.lower}`;
const upperBound = (range: PathRange) => (range.upper === null ? sql`` : sql`and ${TARGET} < ${range.upper}`);

/**
 * The newest available transfer of each path of a destination in a range of paths (byte order),
 * as the portal's tree shows them.
 */
function availableFiles(destination: string, now: Date, range: PathRange & { exact?: string }, limit: number) {
  // The type's label only for one file (its INH line), not for every row of a listing.
  const typeLabel =
    range.exact === undefined
      ? sql``
      : sql`, (select dt.label from destinations d join destination_types dt on dt.id = d.type
          where d.name = t.destination) as destination_type`;
  const exact = range.exact === undefined ? sql`` : sql`and ${TARGET} = ${range.exact}`;
  return sql`
    select distinct on (${TARGET}) ${FILE_COLUMNS} ${typeLabel}
    from data_transfers t join data_files f on f.id = t.data_file_id
    where t.destination = ${destination} ${lowerBound(range)} ${upperBound(range)} ${exact} and ${available(now)}
    ${NEWEST_FIRST}
    limit ${limit}`;
}

/**
 * The entries of the directory `prefix` in a range, one row each: each step seeks the newest
 * available transfer of the first path past the previous entry, past all the paths of a
 * directory at once (its bound, as pastDirectory). Where most paths lie in subdirectories, this
 * reads one row per entry, where the batches of availableFiles read every path below them.
 */
function directoryWalk(destination: string, prefix: string, now: Date, range: PathRange, limit: number) {
  const rest = sql`substr(t.target, length(${prefix}::text) + 1)`;
  const step = (from: SQL) => sql`
    select ${FILE_COLUMNS}, case when strpos(${rest}, '/') > 0
        then ${prefix}::text || split_part(${rest}, '/', 1) || '0' else t.target end as bound
    from data_transfers t join data_files f on f.id = t.data_file_id
    where t.destination = ${destination} ${from} ${upperBound(range)} and ${available(now)}
    ${NEWEST_FIRST}
    limit 1`;
  return sql`
    with recursive walk as (
      (${step(lowerBound(range))})
      union all
      select n.* from walk cross join lateral (${step(sql`and ${TARGET} >= walk.bound and t.target <> walk.target`)}) n
    )
    select * from walk limit ${limit}`;
}

/** The first path after every path below `prefix + name + '/'`, in byte order. */
const pastDirectory = (prefix: string, name: string) => `${prefix}${name}0`;
/** The first path after every path starting with `prefix` (which ends with '/'). */
const pastPrefix = (prefix: string) => (prefix === '' ? null : `${prefix.slice(0, -1)}0`);
const UNREACHABLE_NAMES = new Set(['', '.', '..']);

export const portalRepo = (db: Database): PortalRepo => ({
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
      ? { userId: row.userId, subscriberId: row.subscriberId, csrf: row.csrf, lastSeenAt: row.lastSeenAt }
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
      // few round trips as can be (prepared statements, and the count made by the insert, a
      // statement of its own that sees the connections committed before the lock was granted).
      await runPrepared(
        tx.select({ id: incomingUsers.id }).from(incomingUsers).where(eq(incomingUsers.id, userId)).for('update'),
        'portalLockUser',
      );
      const at = now.toISOString();
      const opened = await executePrepared(
        tx as unknown as Database,
        sql`
          insert into portal_connections (user_id, server, protocol, started_at, lease_until)
          select ${userId}, ${server}, ${protocol}, ${at}::timestamptz, ${leaseUntil.toISOString()}::timestamptz
          where (select count(*) from portal_connections where user_id = ${userId} and lease_until > ${at}::timestamptz)
            < ${max}
          returning id`,
        'portalOpenLimitedConnection',
      );
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

  async list(destination, prefix, now, page) {
    const entries: PortalEntry[] = [];
    const upper = pastPrefix(prefix);
    let lower = page.after === null ? (prefix === '' ? null : prefix) : `${prefix}${page.after}`;
    // A directory cursor is passed with its '/': the page goes on after every path below it.
    let inclusive = page.after === null;
    if (page.after?.endsWith('/')) [lower, inclusive] = [pastDirectory(prefix, page.after.slice(0, -1)), true];
    // Each batch goes on from the last path seen; a directory's further paths are skipped by the
    // next batch's lower bound. Once a batch has skipped paths below a directory, the rest of the
    // page is walked entry by entry (directoryWalk), reading no path it would skip.
    let walking = false;
    while (entries.length < page.limit) {
      const batch = Math.max(page.limit - entries.length, 16) + 1;
      const range = { lower, inclusive, upper };
      const rows = rowsOf<FileRow>(
        walking
          ? await executePrepared(db, directoryWalk(destination, prefix, now, range, batch), 'portalWalk')
          : await executePrepared(db, availableFiles(destination, now, range, batch), 'portalList'),
      );
      let skipping: string | null = null;
      for (const row of rows) {
        if (skipping !== null && row.target.startsWith(skipping)) {
          walking = true;
          continue;
        }
        skipping = null;
        const rest = row.target.slice(prefix.length);
        const slash = rest.indexOf('/');
        const name = slash < 0 ? rest : rest.slice(0, slash);
        [lower, inclusive] = [row.target, false];
        if (UNREACHABLE_NAMES.has(name)) continue;
        if (slash < 0) entries.push({ type: 'file', name, file: toFile(row) });
        else {
          entries.push({ type: 'directory', name });
          skipping = `${prefix}${name}/`;
          [lower, inclusive] = [pastDirectory(prefix, name), true];
        }
        if (entries.length === page.limit) break;
      }
      if (rows.length < batch) break;
    }
    return entries;
  },
  async file(destination, path, now) {
    const rows = rowsOf<FileRow>(
      await executePrepared(
        db,
        availableFiles(destination, now, { lower: null, inclusive: true, upper: null, exact: path }, 1),
        'portalFile',
      ),
    );
    return rows[0] ? toFile(rows[0]) : null;
  },
  async registered(destination, dataFileId) {
    const rows = rowsOf<FileRow>(
      await db.execute(sql`
        select t.id, t.data_file_id, t.target, t.status, f.source, f.size, f.checksum, f.created_at, t.scheduled_at,
          t.expires_at, (select dt.label from destinations d join destination_types dt on dt.id = d.type
            where d.name = t.destination) as destination_type
        from data_transfers t join data_files f on f.id = t.data_file_id
        where t.destination = ${destination} and t.data_file_id = ${dataFileId} and t.status not in ('STOP', 'FAIL')
        order by t.id desc
        limit 1`),
    );
    return rows[0] ? toFile(rows[0]) : null;
  },
});

const numbers = (row: Record<keyof Traffic, string | number> | undefined): Traffic => ({
  downloadBytes: Number(row?.downloadBytes ?? 0),
  uploadBytes: Number(row?.uploadBytes ?? 0),
  downloads: Number(row?.downloads ?? 0),
  uploads: Number(row?.uploads ?? 0),
});
