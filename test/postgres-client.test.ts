import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres, rowsOf, type DbHandle } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { createRepositories } from '../db/repositories/index.ts';
import { onPostgres } from './support/database.ts';

// One connection per handle, so that pg_prepared_statements shows what that connection prepared.
describe.skipIf(!onPostgres())('the Postgres client', () => {
  const name = `ecpds_client_${Date.now().toString(36)}`;
  let admin: postgres.Sql;
  let url: string;
  const handles: DbHandle[] = [];
  const open = (options: { perRequest?: boolean } = {}) => {
    const handle = openPostgres(url, { max: 1, ...options });
    handles.push(handle);
    return handle;
  };
  const prepared = async (handle: DbHandle, fragment: string) => {
    const rows = rowsOf<{ n: number }>(await handle.db.execute(sql.raw(
      `select count(*)::int as n from pg_prepared_statements where statement like '%${fragment}%' and statement not like '%pg_prepared_statements%'`,
    )));
    return rows[0]!.n;
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

  it('prepares a statement with parameters once per connection, in and out of transactions', async () => {
    const handle = open();
    const repos = createRepositories(handle.db);
    expect(await prepared(handle, 'from "destinations"')).toBe(0);
    for (const destination of ['A', 'B', 'C']) expect(await repos.destinations.exists(destination)).toBe(false);
    expect(await prepared(handle, 'from "destinations"')).toBe(1);
    for (const destination of ['D', 'E']) {
      expect(await repos.transaction((tx) => tx.destinations.exists(destination))).toBe(false);
    }
    expect(await prepared(handle, 'from "destinations"')).toBe(1);
  });

  it('a rolled back transaction and its savepoints still work on the prepared client', async () => {
    const handle = open();
    const repos = createRepositories(handle.db);
    await expect(repos.transaction(async (tx) => {
      await tx.countries.exists('gb');
      throw new Error('roll back');
    })).rejects.toThrow('roll back');
    const nested = await handle.db.transaction(async (tx) => tx.transaction(async (inner) => rowsOf<{ one: number }>(await inner.execute(sql`select ${1}::int as one`))));
    expect(nested[0]!.one).toBe(1);
  });

  it('prepares nothing for the Workers, whose connection lives for one request', async () => {
    const handle = open({ perRequest: true });
    const repos = createRepositories(handle.db);
    for (const destination of ['A', 'B']) expect(await repos.destinations.exists(destination)).toBe(false);
    expect(await prepared(handle, 'from "destinations"')).toBe(0);
  });
});
