import { and, asc, eq, sql } from 'drizzle-orm';
import type { PortalService } from '../../core/incoming-users/operations.ts';
import type { IncomingUser, IncomingUserRepo } from '../../core/incoming-users/ports.ts';
import { DEFAULT_PORTAL_OPERATIONS } from '../../core/portal/ports.ts';
import type { Database } from '../client.ts';
import { incomingAssociations, incomingUsers, portalPermissions } from '../schema.ts';

type Row = typeof incomingUsers.$inferSelect;
const toUser = ({ createdAt: _c, updatedAt: _u, ...row }: Row): IncomingUser => ({
  ...row,
  portalService: row.portalService as PortalService,
});

export const incomingUserRepo = (db: Database): IncomingUserRepo => ({
  async find(id) {
    const [row] = await db.select().from(incomingUsers).where(eq(incomingUsers.id, id));
    return row ? toUser(row) : null;
  },
  async insert(user, at) {
    // The user and its default portal permissions in one statement: a user never exists without them.
    const inserted = db.$with('inserted').as(
      db
        .insert(incomingUsers)
        .values({ ...user, createdAt: at, updatedAt: at })
        .onConflictDoNothing()
        .returning({ id: incomingUsers.id }),
    );
    await db
      .with(inserted)
      .insert(portalPermissions)
      .select(
        sql`select ${inserted.id}, operation from ${inserted}, unnest(${sql.raw(
          `array[${DEFAULT_PORTAL_OPERATIONS.map((o) => `'${o}'`).join(', ')}]`,
        )}) as operation`,
      );
  },
  async update(id, patch, at) {
    await db
      .update(incomingUsers)
      .set({ ...patch, updatedAt: at })
      .where(eq(incomingUsers.id, id));
  },
  async list({ destination }) {
    // One query: each user with its sorted destination names.
    // json_agg, not array_agg: JSON needs no type lookup, which per-request clients on Workers skip.
    const aggregated = sql`select json_agg(a.destination order by a.destination) from ${incomingAssociations} a`;
    const associations = sql<string[]>`coalesce((${aggregated} where a.user_id = ${incomingUsers.id}), '[]'::json)`;
    const associated = sql`select 1 from ${incomingAssociations} f where f.user_id = ${incomingUsers.id}`;
    const rows = await db
      .select({ user: incomingUsers, associations })
      .from(incomingUsers)
      .where(destination === undefined ? undefined : sql`exists (${associated} and f.destination = ${destination})`)
      .orderBy(asc(incomingUsers.id));
    return rows.map((r) => ({ ...toUser(r.user), associations: r.associations }));
  },
  async addAssociation(id, destination) {
    await db.insert(incomingAssociations).values({ userId: id, destination }).onConflictDoNothing();
  },
  async removeAssociation(id, destination) {
    const rows = await db
      .delete(incomingAssociations)
      .where(and(eq(incomingAssociations.userId, id), eq(incomingAssociations.destination, destination)))
      .returning({ id: incomingAssociations.userId });
    return rows.length > 0;
  },
  async associations(id) {
    const rows = await db
      .select({ destination: incomingAssociations.destination })
      .from(incomingAssociations)
      .where(eq(incomingAssociations.userId, id))
      .orderBy(asc(incomingAssociations.destination));
    return rows.map((r) => r.destination);
  },
});
