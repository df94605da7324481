import { asc, eq, type SQL, sql } from 'drizzle-orm';
import type { WebUser, WebUserRepo } from '../../core/web-users/ports.ts';
import type { Database } from '../client.ts';
import { webUserCategories, webUsers } from '../schema.ts';

type Row = typeof webUsers.$inferSelect;
const toUser = ({ createdAt: _c, updatedAt: _u, ...row }: Row): WebUser => row;

/** Web users (all, or those `where` selects) by id, each with its categories in order. */
export async function webUsersWithCategories(db: Database, where?: SQL) {
  const aggregated = sql`select json_agg(c.category order by c.category) from ${webUserCategories} c`;
  const categories = sql<string[]>`coalesce((${aggregated} where c.user_id = ${webUsers.id}), '[]'::json)`;
  const rows = await db.select({ user: webUsers, categories }).from(webUsers).where(where).orderBy(asc(webUsers.id));
  return rows.map((r) => ({ ...toUser(r.user), categories: r.categories }));
}

export const webUserRepo = (db: Database): WebUserRepo => ({
  async find(id) {
    const [row] = await db.select().from(webUsers).where(eq(webUsers.id, id));
    return row ? toUser(row) : null;
  },
  async insert(user, at) {
    const rows = await db
      .insert(webUsers)
      .values({ ...user, createdAt: at, updatedAt: at })
      .onConflictDoNothing()
      .returning({ id: webUsers.id });
    return rows.length === 1;
  },
  async update(id, patch, at) {
    await db
      .update(webUsers)
      .set({ ...patch, updatedAt: at })
      .where(eq(webUsers.id, id));
  },
  async listActive({ category }) {
    const assigned = sql`select 1 from ${webUserCategories} f where f.user_id = ${webUsers.id}`;
    const onlyCategory = category === undefined ? sql`true` : sql`exists (${assigned} and f.category = ${category})`;
    return webUsersWithCategories(db, sql`${webUsers.active} and ${onlyCategory}`);
  },
  async delete(id) {
    const rows = await db.delete(webUsers).where(eq(webUsers.id, id)).returning({ id: webUsers.id });
    return rows.length === 1;
  },
});
