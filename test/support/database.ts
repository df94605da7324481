import fs from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { inject } from 'vitest';
import { type DbHandle, openPostgres } from '../../db/client.ts';
import { migrate } from '../../db/migrate.ts';
import { openPglite, pgliteHandle } from '../../db/pglite.ts';
import { serverOf } from './template-database.ts';

/**
 * A fresh, migrated database for one test file: in-memory PGlite by default, or a new
 * database on the server of TEST_DATABASE_URL (dropped again by `close`). Both are copies of
 * the database test/support/template-database.ts migrated once for the run, when there is one.
 */
export async function freshDatabase(): Promise<DbHandle> {
  const url = process.env.TEST_DATABASE_URL;
  return url ? freshPostgres(url) : freshPglite();
}

async function freshPglite(): Promise<DbHandle> {
  const template = inject('pgliteTemplate');
  if (!template) {
    const handle = await openPglite();
    await migrate(handle);
    return handle;
  }
  return pgliteHandle(await PGlite.create({ loadDataDir: new Blob([fs.readFileSync(template)]) }));
}

/**
 * A fresh, migrated database on the server of `url` (dropped again by `close`), with its own URL for
 * the processes a test starts on it.
 */
export async function freshPostgres(url: string): Promise<DbHandle & { url: string }> {
  const { default: postgres } = await import('postgres');
  // A test with its own cluster (test/faults) cannot copy the run's template from another server.
  const provided = inject('postgresTemplate');
  const template = provided && provided.server === serverOf(url) ? provided.name : undefined;
  const name = `ecpds_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = postgres(url, { max: 1, onnotice: () => undefined });
  await admin.unsafe(template ? `create database "${name}" template "${template}"` : `create database "${name}"`);
  const target = new URL(url);
  target.pathname = `/${name}`;
  const handle = await openDriver(target.toString());
  if (!template) await migrate(handle);
  return {
    ...handle,
    url: target.toString(),
    async close() {
      await handle.close();
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    },
  };
}

export const onPostgres = () => Boolean(process.env.TEST_DATABASE_URL);

/**
 * postgres.js, or with TEST_DATABASE_DRIVER=neon Neon's WebSocket driver through a proxy of the
 * test process's own, as runtimes without TCP reach Postgres.
 */
async function openDriver(url: string): Promise<DbHandle> {
  if (process.env.TEST_DATABASE_DRIVER !== 'neon') return openPostgres(url, { max: 5 });
  const [{ openNeon }, { neonProxy }, { WebSocket }] = await Promise.all([
    import('../../db/neon.ts'),
    import('./neon-proxy.ts'),
    import('ws'),
  ]);
  const proxy = (await neonProxy()).replace(/^ws:\/\//, '');
  return openNeon(url, { max: 5, wsProxy: proxy, secure: false, webSocket: WebSocket as never });
}
