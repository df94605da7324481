import { openPostgres, type DbHandle } from '../../db/client.ts';
import { openPglite } from '../../db/pglite.ts';
import { migrate } from '../../db/migrate.ts';

/**
 * A fresh, migrated database for one test file: in-memory PGlite by default, or a new
 * database on the server of TEST_DATABASE_URL (dropped again by `close`).
 */
export async function freshDatabase(): Promise<DbHandle> {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) {
    const handle = await openPglite();
    await migrate(handle);
    return handle;
  }
  const { default: postgres } = await import('postgres');
  const name = `ecpds_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = postgres(url, { max: 1, onnotice: () => undefined });
  await admin.unsafe(`create database "${name}"`);
  const target = new URL(url);
  target.pathname = `/${name}`;
  const handle = openPostgres(target.toString(), { max: 5 });
  await migrate(handle);
  return {
    ...handle,
    async close() {
      await handle.close();
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    },
  };
}

export const onPostgres = () => Boolean(process.env.TEST_DATABASE_URL);
