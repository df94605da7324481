import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import type { Database, DbHandle } from './client.ts';
import { preparingClient } from './pglite-statements.ts';
import * as schema from './schema.ts';

/** The embedded database: PGlite in `dataDir`, or in memory when none is given. Node only. */
export async function openPglite(dataDir?: string): Promise<DbHandle> {
  const client = dataDir ? await PGlite.create(dataDir) : await PGlite.create();
  const db = drizzle(preparingClient(client), { schema }) as unknown as Database;
  return { db, kind: 'pglite', close: () => client.close() };
}
