import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DbHandle, openPostgres, rowsOf } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { createRepositories } from '../db/repositories/index.ts';
import { onPostgres } from './support/database.ts';

// One connection per handle: what one transaction leaves behind is what the next query meets.
describe.skipIf(!onPostgres())('the Postgres client', () => {
  const name = `ecpds_client_${Date.now().toString(36)}`;
  let admin: postgres.Sql;
  let url: string;
  const handles: DbHandle[] = [];
  const open = () => {
    const handle = openPostgres(url, { max: 1 });
    handles.push(handle);
    return handle;
  };
  beforeAll(async () => {
    admin = postgres(process.env.TEST_DATABASE_URL!, { max: 1, onnotice: () => undefined });
    await admin.unsafe(`create database "${name}"`);
    const target = new URL(process.env.TEST_DATABASE_URL!);
    target.pathname = `/${name}`;
    url = target.toString();
    const setup = openPostgres(url, { max: 1 });
    await migrate(setup);
    await setup.close();
  });
  afterAll(async () => {
    for (const handle of handles) await handle.close();
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
  });

  it('a rolled back transaction and its savepoints leave the client usable', async () => {
    const handle = open();
    const repos = createRepositories(handle.db);
    await expect(
      repos.transaction(async (tx) => {
        await tx.countries.exists('gb');
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    const nested = await handle.db.transaction(async (tx) =>
      tx.transaction(async (inner) => rowsOf<{ one: number }>(await inner.execute(sql`select ${1}::int as one`))),
    );
    expect(nested[0]!.one).toBe(1);
  });
});
