import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../db/client.ts';
import { disseminationRepo } from '../../db/repositories/dissemination.ts';
import { freshDatabase } from '../support/database.ts';
import { nodesOf, plansOf, scannedTables, statementsOf } from '../support/plans.ts';

/**
 * /metrics reads the alerts' figures at every scrape (db/repositories/ops-figures.ts): one statement that
 * reads every destination, but of the transfers only the waiting ones and of the history only the last
 * hour's, however many ended transfers there are, on tables never analyzed (as the embedded database's).
 */
const DESTINATIONS = 2_000;
const ENDED = 20_000;
let handle: DbHandle;
let now: Date;

beforeAll(async () => {
  handle = await freshDatabase();
  const tables = ['destinations', 'data_transfers', 'transfer_history', 'wis2_outbox', 'movers'];
  const statements = `
    ${tables.map((t) => `alter table ${t} set (autovacuum_enabled = false)`).join(';')};
    insert into destinations (name, country_iso, type, status_code, max_pending)
    select 'OF_' || lpad(g::text, 6, '0'), 'gb', 1, case when g = 2 then 'HOLD' else 'WAIT' end,
      case when g = 3 then 0 when g = 4 then 50 end
    from generate_series(1, ${DESTINATIONS}) g;
    insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at)
    select g, 'OF_' || lpad((1 + g % ${DESTINATIONS})::text, 6, '0'), 'f' || g, 99, 'DONE',
      now() - interval '2 hours', now() + interval '1 day'
    from generate_series(1, ${ENDED}) g;
    insert into transfer_history (transfer_id, destination, status, at, error)
    select id, destination, 'RETR', now() - interval '2 hours', true from data_transfers;
    insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at)
    values (900001, 'OF_000001', 'w1', 99, 'RETR', now() - interval '30 minutes', now() + interval '1 day'),
      (900002, 'OF_000001', 'w2', 99, 'WAIT', now() - interval '10 minutes', now() + interval '1 day'),
      (900003, 'OF_000001', 'w3', 99, 'WAIT', now() + interval '1 hour', now() + interval '1 day'),
      (900004, 'OF_000002', 'w4', 99, 'WAIT', now() - interval '5 minutes', now() + interval '1 day');
    insert into transfer_history (transfer_id, destination, status, at, error)
    select id, destination, 'RETR', now() - interval '10 minutes', true from data_transfers where target = 'w1';
    insert into transfer_history (transfer_id, destination, status, at, error)
    select id, destination, 'RETR', now() - interval '5 minutes', true from data_transfers where target = 'w1';
    insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at,
      mover, lease_until)
    values (900005, 'OF_000005', 'e1', 99, 'EXEC', now() - interval '1 minute', now() + interval '1 day',
      'mover-a', now() + interval '40 seconds');
    insert into movers (name, started_at, heartbeat_at, heartbeat_ms, stopped_at)
    values ('mover-a', now() - interval '1 hour', now() - interval '5 seconds', 15000, null),
      ('mover-b', now() - interval '1 hour', now() - interval '2 minutes', 15000, null),
      ('mover-stopped', now() - interval '1 hour', now() - interval '2 minutes', 15000, now() - interval '2 minutes'),
      ('mover-gone', now() - interval '9 days', now() - interval '8 days', 15000, null);
    insert into wis2_outbox (destination, target, kind, not_before)
    values ('OF_000001', 'w1', 'new', now() - interval '3 minutes'),
      ('OF_000001', 'w2', 'new', now() + interval '1 hour')`;
  for (const statement of statements.split(';')) await handle.db.execute(sql.raw(statement));
  now = new Date();
});
afterAll(() => handle.close());

const figures = () => disseminationRepo(handle.db).opsFigures(now);

describe("the alerts' figures", () => {
  it('counts each destination waiting files, its oldest due one, its failures of the hour, its status', async () => {
    const f = await figures();
    expect(f.destinations).toHaveLength(DESTINATIONS);
    const of = (name: string) => f.destinations.find((d) => d.destination === name)!;
    expect(of('OF_000001')).toMatchObject({ waiting: 3, failedLastHour: 1, status: 'WAIT', maxPending: 8000 });
    const age = (now.getTime() - of('OF_000001').oldestWaitingSince!.getTime()) / 1000;
    expect(age).toBeGreaterThan(29 * 60);
    expect(age).toBeLessThan(31 * 60);
    expect(of('OF_000002')).toMatchObject({ waiting: 1, failedLastHour: 0, status: 'HOLD' });
    expect(of('OF_000003')).toMatchObject({ waiting: 0, oldestWaitingSince: null, maxPending: null });
    expect(of('OF_000004').maxPending).toBe(50);
    expect(f.wis2Outbox.pending).toBe(2);
    expect((now.getTime() - f.wis2Outbox.oldestDueAt!.getTime()) / 1000).toBeGreaterThan(170);
    // Neither the mover stopped on purpose nor the one silent for over a week.
    expect(f.movers.map((m) => m.mover)).toEqual(['mover-a', 'mover-b']);
    const heartbeatAge = (mover: string) => f.movers.find((m) => m.mover === mover)!.heartbeatAgeSeconds;
    expect(heartbeatAge('mover-a')).toBeGreaterThanOrEqual(5);
    expect(heartbeatAge('mover-a')).toBeLessThan(30);
    expect(heartbeatAge('mover-b')).toBeGreaterThanOrEqual(120);
    expect(f.movers[0]!.heartbeatSeconds).toBe(15);
  });

  it('is one statement that reads of the transfers and history only the live ones and the hour', async () => {
    const statements = await statementsOf(handle.db, figures);
    expect(statements).toHaveLength(1);
    const { custom, generic } = await plansOf(handle.db, statements[0]!);
    for (const plan of [custom, generic]) {
      // Every destination is reported; movers holds a row per mover.
      expect(scannedTables(plan).filter((t) => t !== 'destinations' && t !== 'movers')).toEqual([]);
      // Rows read out of the transfers and the history: the 5 live transfers and the 2 failures of the hour,
      // not the 20,000 ended ones and their history.
      const read = nodesOf(plan)
        .filter((n) => n['Relation Name'] === 'data_transfers' || n['Relation Name'] === 'transfer_history')
        .reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
      expect(read).toBeLessThan(50);
    }
  });
});
