import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import type { Database, DbHandle } from './client.ts';
import { preparingClient } from './pglite-statements.ts';
import * as schema from './schema.ts';

/** The embedded database: PGlite in `dataDir`, or in memory when none is given. Node only. */
export async function openPglite(dataDir?: string): Promise<DbHandle> {
  return pgliteHandle(dataDir ? await PGlite.create(dataDir) : await PGlite.create());
}

/** A handle on an open PGlite, its statements kept prepared. */
export function pgliteHandle(client: PGlite): DbHandle {
  const db = drizzle(preparingClient(client), { schema }) as unknown as Database;
  return { db, kind: 'pglite', close: () => client.close() };
}
