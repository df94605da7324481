import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DbHandle, openPostgres, rowsOf } from '../../db/client.ts';
import { disseminationRepo } from '../../db/repositories/dissemination.ts';
import { monitorRepo } from '../../db/repositories/monitor.ts';
import { retrievalRepo } from '../../db/repositories/retrieval.ts';
import { freshDatabase, onPostgres } from '../support/database.ts';
import { plansOf, scannedTables, statementsOf } from '../support/plans.ts';

/**
 * The statements run for every look for work, every claim's view and every monitor page read a
 * destination's rows through their keys, however many destinations, hosts and transfers there are,
 * on tables never analyzed: the embedded database never analyzes, and Postgres only what changed.
 */
const DESTINATIONS = 10_000;
const TRANSFERS = 20_000;
const DUE = 20;
/** The tables that grow with the installation. */
const LARGE = ['destinations', 'hosts', 'destination_hosts', 'destination_state', 'data_transfers', 'data_files'];
let handle: DbHandle;

beforeAll(async () => {
  handle = await freshDatabase();
  const tables = ['destinations', 'hosts', 'destination_hosts', 'destination_state', 'data_transfers', 'data_files'];
  const statements = `
    ${tables.map((t) => `alter table ${t} set (autovacuum_enabled = false)`).join(';')};
    alter table destination_queue set (autovacuum_enabled = false);
    insert into ectrans_modules (name) values ('sftp');
    insert into transfer_methods (name, ectrans_module_name) values ('sftp', 'sftp');
    insert into destinations (name, country_iso, type, status_code, max_connections)
    select 'HS_' || lpad(g::text, 6, '0'), 'gb', 1, 'WAIT', 4 from generate_series(1, ${DESTINATIONS}) g;
    insert into hosts (hostid, transfer_method_name, type, host, login, dir, active)
    select g, 'sftp', 'Dissemination', 'h' || g || '.example.org', 'u', '/', true
    from generate_series(1, ${DESTINATIONS}) g;
    insert into destination_hosts (destination, hostid, priority)
    select 'HS_' || lpad(g::text, 6, '0'), g, 0 from generate_series(1, ${DESTINATIONS}) g;
    insert into destination_state (destination) select name from destinations;
    insert into data_files (id, source, size, registered_by)
    select g, '/data/' || g, 1, 'test' from generate_series(1, ${TRANSFERS}) g;
    insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at,
      queue_at)
    select g, 'HS_' || lpad((1 + g % ${DESTINATIONS})::text, 6, '0'), 'f' || g, 99,
      case when g <= ${TRANSFERS - DUE} then 'DONE' else 'WAIT' end,
      now() - interval '1 hour', now() + interval '1 day', now() - interval '1 minute'
    from generate_series(1, ${TRANSFERS}) g`;
  for (const statement of statements.split(';')) await handle.db.execute(sql.raw(statement));
});
afterAll(() => handle.close());

/** Every statement `work` runs, planned for its values and generically: no large table read whole. */
async function expectLookupsOnly(work: () => Promise<unknown>) {
  const statements = await statementsOf(handle.db, work);
  expect(statements.length).toBeGreaterThan(0);
  for (const statement of statements) {
    const { custom, generic } = await plansOf(handle.db, statement);
    const large = (plan: typeof custom) => scannedTables(plan).filter((t) => LARGE.includes(t));
    expect({
      statement: statement.sql,
      custom: large(custom),
      generic: large(generic),
    }).toEqual({
      statement: statement.sql,
      custom: [],
      generic: [],
    });
  }
}

describe('hot statements, on tables never analyzed', () => {
  const repo = () => disseminationRepo(handle.db);

  it("the look for due destinations, with each one's hosts", async () => {
    const due = await repo().dueDestinations(new Date(), 50);
    expect(due).toHaveLength(DUE);
    expect(due[0]!.hosts.map((h) => h.module)).toEqual(['sftp']);
    await expectLookupsOnly(() => repo().dueDestinations(new Date(), 50));
  });

  it.runIf(onPostgres())('the look is planned once per connection, not again at every look', async () => {
    const one = openPostgres((handle as DbHandle & { url: string }).url, {
      max: 1,
    });
    try {
      for (let i = 0; i < 8; i++)
        expect(await disseminationRepo(one.db).dueDestinations(new Date(), 10)).toHaveLength(10);
      const [plans] = rowsOf<{ generic_plans: number; custom_plans: number }>(
        await one.db.execute(sql`
          select generic_plans::int, custom_plans::int from pg_prepared_statements where statement like '%with due as%'`),
      );
      // Postgres tries plans made for the values first, then keeps the generic one when it costs no more.
      expect(plans).toMatchObject({ generic_plans: 3, custom_plans: 5 });
    } finally {
      await one.close();
    }
  });

  it('the same look for the movers of some transfer methods', async () => {
    expect(await repo().dueDestinations(new Date(), 50, { modules: ['sftp'] })).toHaveLength(DUE);
    expect(await repo().dueDestinations(new Date(), 50, { modules: ['ftp'] })).toEqual([]);
    await expectLookupsOnly(() => repo().dueDestinations(new Date(), 50, { modules: ['sftp'] }));
  });

  it("the destinations' scheduler views", async () => {
    const names = ['HS_000001', 'HS_000002', 'HS_000002', 'HS_NONE'];
    const views = await repo().schedulerViews(names, new Date());
    expect([...views.keys()].sort()).toEqual(['HS_000001', 'HS_000002']);
    await expectLookupsOnly(() => repo().schedulerViews(names, new Date()));
  });

  it("the monitor's page of destinations, and a destination's hosts", async () => {
    const page = await monitorRepo(handle.db).destinations({
      after: 'HS_000001',
      limit: 3,
    });
    expect(page.map((d) => [d.name, d.hosts.length])).toEqual([
      ['HS_000002', 1],
      ['HS_000003', 1],
      ['HS_000004', 1],
    ]);
    expect(page[0]!.counts).toEqual({ DONE: 2 });
    await expectLookupsOnly(() => monitorRepo(handle.db).destinations({ limit: 50 }));
    expect(await monitorRepo(handle.db).hostsOf('HS_000002')).toHaveLength(1);
    await expectLookupsOnly(() => monitorRepo(handle.db).hostsOf('HS_000002'));
  });

  it('the claim of files to retrieve, past a burst of puts', async () => {
    // Files registered after the last statistics: their transfers wait for their retrieval.
    await handle.db.execute(
      sql.raw(`insert into data_files (id, source, size, registered_by)
        select g, '/data/' || g, 1, 'test' from generate_series(${TRANSFERS + 1}, ${TRANSFERS + 5}) g`),
    );
    await handle.db.execute(
      sql.raw(`insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at,
          expires_at, queue_at)
        select g, 'HS_000001', 'r' || g, 99, 'SCHE', now(), now() + interval '1 day', now()
        from generate_series(${TRANSFERS + 1}, ${TRANSFERS + 5}) g`),
    );
    const claims = await retrievalRepo(handle.db).claim('plans', 60_000, 2);
    expect(claims.map((c) => c.dataFileId)).toHaveLength(2);
    await expectLookupsOnly(() => retrievalRepo(handle.db).claim('plans', 60_000, 2));
  });
});
