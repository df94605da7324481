import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { purgeRetired, type RetentionLimits } from '../../core/retention/purge.ts';
import { rowsOf } from '../../db/client.ts';
import { createHarness, type Harness } from '../support/harness.ts';

const DAY = 86_400_000;
const NOW = new Date();
const LIMITS: RetentionLimits = { maxTransferLifeDays: 210, maxIdentityCount: 7, batchSize: 1000 };
let h: Harness;
let admin: string;
let nextId = 1;

beforeAll(async () => {
  h = await createHarness();
  h.ports.clock = () => NOW;
  admin = await h.client('admin', ['.*']);
  await h.addDestination('KEEPD');
  await h.addDestination('OTHERD');
});
afterAll(() => h.close());
beforeEach(async () => {
  // Each case starts from an empty engine and a purge that has read nothing yet.
  for (const table of ['transfer_history', 'data_transfers', 'data_files', 'wis2_outbox', 'retention_state']) {
    await h.db.execute(sql.raw(`delete from ${table}`));
  }
});

interface Seed {
  status: string;
  changedDaysAgo?: number;
  createdMinutesAgo?: number;
  destination?: string;
  target?: string;
  mover?: string | null;
  history?: number;
  dataFileId?: number;
}

/**
 * A transfer as years of sending leave it: its file, its history rows, its last change `changedDaysAgo`.
 * Each has its own unique name, as the runs of a recurring file (one identity) have.
 */
async function seed(s: Seed): Promise<{ id: number; dataFileId: number }> {
  const id = nextId++;
  const dataFileId = s.dataFileId ?? id;
  const changed = new Date(NOW.getTime() - (s.changedDaysAgo ?? 0) * DAY).toISOString();
  const created = new Date(NOW.getTime() - (s.createdMinutesAgo ?? 60) * 60_000).toISOString();
  if (s.dataFileId === undefined) {
    await h.db.execute(sql`insert into data_files (id, source, size, registered_by)
      values (${dataFileId}, ${`/srv/f${id}`}, 10, 'test')`);
  }
  await h.db.execute(sql`
    insert into data_transfers (id, data_file_id, destination, target, unique_name, priority, status, scheduled_at,
      expires_at, queue_at, mover, lease_until, created_at, updated_at)
    values (${id}, ${dataFileId}, ${s.destination ?? 'KEEPD'}, ${s.target ?? `t${id}`}, ${`run${id}`}, 99, ${s.status},
      ${changed}::timestamptz, ${changed}::timestamptz + interval '1 day', ${changed}::timestamptz, ${s.mover ?? null},
      ${s.mover ? NOW.toISOString() : null}::timestamptz, ${created}::timestamptz, ${changed}::timestamptz)`);
  for (let i = 0; i < (s.history ?? 2); i++) {
    await h.db.execute(sql`insert into transfer_history (transfer_id, destination, status, at, comment)
      values (${id}, ${s.destination ?? 'KEEPD'}, ${s.status}, ${changed}::timestamptz, 'seeded')`);
  }
  return { id, dataFileId };
}

const count = async (query: ReturnType<typeof sql>) =>
  Number(rowsOf<{ n: string | number }>(await h.db.execute(query))[0]!.n);
const transferIds = async () =>
  rowsOf<{ id: string | number }>(await h.db.execute(sql`select id from data_transfers order by id`)).map((r) =>
    Number(r.id),
  );
const historyOf = (id: number) => count(sql`select count(*) as n from transfer_history where transfer_id = ${id}`);
const fileExists = async (id: number) => (await count(sql`select count(*) as n from data_files where id = ${id}`)) > 0;

describe('retention: maxTransferLife', () => {
  it('purges ended transfers (DONE, FAIL, STOP) last changed more than 210 days ago, with their history', async () => {
    const old = await Promise.all(['DONE', 'FAIL', 'STOP'].map((status) => seed({ status, changedDaysAgo: 211 })));
    const young = await seed({ status: 'DONE', changedDaysAgo: 209 });

    const purged = await purgeRetired(h.ports, LIMITS);

    expect(purged).toMatchObject({ transfers: 3, history: 6, dataFiles: 3 });
    expect(await transferIds()).toEqual([young.id]);
    for (const t of old) {
      expect(await historyOf(t.id)).toBe(0);
      expect(await fileExists(t.dataFileId)).toBe(false);
    }
    expect(await historyOf(young.id)).toBe(2);
    expect(await fileExists(young.dataFileId)).toBe(true);
  });

  it('never purges a transfer waiting, held or running, however old, nor one whose attempt may write', async () => {
    const kept = [
      ...(await Promise.all(
        ['WAIT', 'RETR', 'INTR', 'HOLD', 'INIT', 'EXEC'].map((status) => seed({ status, changedDaysAgo: 400 })),
      )),
      // Stopped by an operator while a mover still holds its lease: that attempt ends it first.
      await seed({ status: 'STOP', changedDaysAgo: 400, mover: 'm1' }),
    ];

    const purged = await purgeRetired(h.ports, LIMITS);

    expect(purged.transfers).toBe(0);
    expect(await transferIds()).toEqual(kept.map((t) => t.id));
    for (const t of kept) expect(await historyOf(t.id)).toBe(2);
  });

  it('follows ECPDS_MAX_TRANSFER_LIFE_DAYS', async () => {
    const t = await seed({ status: 'DONE', changedDaysAgo: 31 });
    const kept = await seed({ status: 'DONE', changedDaysAgo: 29 });
    expect((await purgeRetired(h.ports, { ...LIMITS, maxTransferLifeDays: 30 })).transfers).toBe(1);
    expect(await transferIds()).toEqual([kept.id]);
    expect(await historyOf(t.id)).toBe(0);
  });
});

describe('retention: maxIdentityCount', () => {
  it('keeps the 7 newest transfers of a destination and target, and purges the older ended ones', async () => {
    const statuses = ['DONE', 'FAIL', 'WAIT', 'STOP', 'DONE', 'HOLD', 'DONE', 'DONE', 'WAIT', 'DONE', 'DONE', 'EXEC'];
    const same = [];
    for (const status of statuses) same.push(await seed({ status, target: 'daily.grib' }));
    // The same target elsewhere, and another target here, are other identities.
    const elsewhere = await seed({ status: 'DONE', target: 'daily.grib', destination: 'OTHERD' });
    const other = await seed({ status: 'DONE', target: 'other.grib' });

    const purged = await purgeRetired(h.ports, LIMITS);

    // The five oldest are beyond the seven newest: DONE, FAIL, STOP and DONE go, the waiting one stays.
    expect(purged).toMatchObject({ transfers: 4, history: 8, dataFiles: 4 });
    const left = await transferIds();
    expect(left).toEqual([same[2]!.id, ...same.slice(5).map((t) => t.id), elsewhere.id, other.id]);
    expect(await historyOf(same[0]!.id)).toBe(0);
    expect(await historyOf(same[2]!.id)).toBe(2);
  });

  it('checks an identity when a transfer arrives, leaving one of the last minute to the next sweep', async () => {
    for (let i = 0; i < 8; i++) await seed({ status: 'DONE', target: 'hourly.bufr' });
    const recent = await seed({ status: 'DONE', target: 'hourly.bufr', createdMinutesAgo: 0 });

    // The eighth older one pushes the first out; the one of this minute is not read yet.
    expect((await purgeRetired(h.ports, LIMITS)).transfers).toBe(2);
    expect(await transferIds()).toHaveLength(7);
    expect(await transferIds()).toContain(recent.id);

    // Nothing new arrived: the next sweep reads nothing again and purges nothing.
    expect((await purgeRetired(h.ports, LIMITS)).transfers).toBe(0);
  });

  it('follows ECPDS_MAX_IDENTITY_COUNT', async () => {
    const all = [];
    for (let i = 0; i < 4; i++) all.push(await seed({ status: 'DONE', target: 'x' }));
    expect((await purgeRetired(h.ports, { ...LIMITS, maxIdentityCount: 1 })).transfers).toBe(3);
    expect(await transferIds()).toEqual([all[3]!.id]);
  });
});

describe('retention: data files', () => {
  it('deletes a data file only once none of its transfers is left and no WIS2 notice waits for it', async () => {
    const shared = await seed({ status: 'DONE', changedDaysAgo: 300 });
    const sibling = await seed({ status: 'DONE', changedDaysAgo: 1, dataFileId: shared.dataFileId });
    const noticed = await seed({ status: 'DONE', changedDaysAgo: 300 });
    await h.db.execute(sql`insert into wis2_outbox (data_file_id, transfer_id, destination, target, kind, not_before)
      values (${noticed.dataFileId}, ${noticed.id}, 'KEEPD', 'x', 'new', now())`);

    expect(await purgeRetired(h.ports, LIMITS)).toMatchObject({ transfers: 2, dataFiles: 0 });
    expect(await transferIds()).toEqual([sibling.id]);
    expect(await fileExists(shared.dataFileId)).toBe(true);
    expect(await fileExists(noticed.dataFileId)).toBe(true);
  });
});

describe('retention: batches', () => {
  it('purges in batches of ECPDS_PURGE_BATCH, and a sweep capped in batches leaves the rest to the next', async () => {
    for (let i = 0; i < 7; i++) await seed({ status: 'DONE', changedDaysAgo: 300 + i });

    const capped = await purgeRetired(h.ports, { ...LIMITS, batchSize: 2, maxBatches: 2 });
    expect(capped.transfers).toBe(4);
    expect(await transferIds()).toHaveLength(3);
    // The oldest go first.
    expect(
      await count(sql`select count(*) as n from data_transfers where updated_at < now() - interval '304 days'`),
    ).toBe(0);

    const rest = await purgeRetired(h.ports, { ...LIMITS, batchSize: 2 });
    expect(rest.transfers).toBe(3);
    // Two full batches and a short last one by age, then one identity batch (short: nothing left to read).
    expect(rest.batches).toBe(3);
    expect(await transferIds()).toEqual([]);
  });
});

describe('retention: /metrics', () => {
  it('counts the purged transfers, history rows and data files, over sweeps', async () => {
    const before = await metrics();
    await seed({ status: 'DONE', changedDaysAgo: 250, history: 3 });
    await seed({ status: 'FAIL', changedDaysAgo: 250, history: 1 });
    await purgeRetired(h.ports, LIMITS);
    await seed({ status: 'STOP', changedDaysAgo: 250, history: 2 });
    await purgeRetired(h.ports, LIMITS);

    const after = await metrics();
    expect(after.get('ecpds_purged_transfers_total')).toBe((before.get('ecpds_purged_transfers_total') ?? 0) + 3);
    expect(after.get('ecpds_purged_history_rows_total')).toBe((before.get('ecpds_purged_history_rows_total') ?? 0) + 6);
    expect(after.get('ecpds_purged_data_files_total')).toBe((before.get('ecpds_purged_data_files_total') ?? 0) + 3);
  });
});

async function metrics(): Promise<Map<string, number>> {
  const r = await h.call('GET', '/metrics', { auth: admin });
  expect(r.status).toBe(200);
  const values = new Map<string, number>();
  for (const line of r.text.split('\n')) {
    const m = /^(ecpds_purged_\w+) (\d+)$/.exec(line);
    if (m) values.set(m[1]!, Number(m[2]));
  }
  expect([...values.keys()].sort()).toEqual([
    'ecpds_purged_data_files_total',
    'ecpds_purged_history_rows_total',
    'ecpds_purged_transfers_total',
  ]);
  return values;
}
