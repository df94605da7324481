import { fileURLToPath } from 'node:url';
import type { DbHandle } from './client.ts';

const migrationsFolder = fileURLToPath(new URL('./migrations', import.meta.url));

/** Applies the committed drizzle-kit migrations; the same SQL on PGlite and Postgres. */
export async function migrate(handle: DbHandle): Promise<void> {
  if (handle.kind === 'pglite') {
    const { migrate: run } = await import('drizzle-orm/pglite/migrator');
    await run(handle.db as never, { migrationsFolder });
  } else {
    const { migrate: run } = await import('drizzle-orm/postgres-js/migrator');
    await run(handle.db as never, { migrationsFolder });
  }
}
