import { asc, count, eq } from 'drizzle-orm';
import type { ApiClient, ClientOrigin, ClientRepo } from '../../core/api-clients/ports.ts';
import type { Database } from '../client.ts';
import { apiClients } from '../schema.ts';

const toClient = (row: typeof apiClients.$inferSelect): ApiClient => ({ ...row, origin: row.origin as ClientOrigin });

export const clientRepo = (db: Database): ClientRepo => ({
  async find(username) {
    const [row] = await db.select().from(apiClients).where(eq(apiClients.username, username));
    return row ? toClient(row) : null;
  },
  async list() {
    return (await db.select().from(apiClients).orderBy(asc(apiClients.username))).map(toClient);
  },
  async count() {
    const [row] = await db.select({ n: count() }).from(apiClients);
    return row?.n ?? 0;
  },
  async insert(client) {
    const rows = await db
      .insert(apiClients)
      .values(client)
      .onConflictDoNothing()
      .returning({ username: apiClients.username });
    return rows.length === 1;
  },
  async update(username, patch) {
    const rows = await db
      .update(apiClients)
      .set(patch)
      .where(eq(apiClients.username, username))
      .returning({ username: apiClients.username });
    return rows.length === 1;
  },
  async delete(username) {
    const rows = await db
      .delete(apiClients)
      .where(eq(apiClients.username, username))
      .returning({ username: apiClients.username });
    return rows.length === 1;
  },
  async touch(username, at) {
    await db.update(apiClients).set({ lastUsedAt: at }).where(eq(apiClients.username, username));
  },
});
