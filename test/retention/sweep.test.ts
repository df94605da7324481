import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweep } from '../../core/retention/sweep.ts';
import { rowsOf } from '../../db/client.ts';
import { createHarness, type Harness } from '../support/harness.ts';

const LIMITS = { maxTransferLifeDays: 210, maxIdentityCount: 7, batchSize: 1000 };
let h: Harness;
let admin: string;
let root: string;

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-retention-')));
  fs.writeFileSync(path.join(root, 'run.grib'), 'grib');
  h = await createHarness({ sourceRoots: [root] });
  admin = await h.client('admin', ['.*']);
  await h.addDestination('RUNS');
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const put = async (q: Record<string, string>) => {
  const query = new URLSearchParams({ destination: 'RUNS', source: path.join(root, 'run.grib'), ...q });
  const r = await h.call('GET', `/v1/datafile/put?${query}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  return r.json.id as number;
};
const transfers = async () =>
  rowsOf<{ unique_name: string; status: string }>(
    await h.db.execute(sql`select unique_name, status from data_transfers order by id`),
  );

describe('the sweep', () => {
  it('fails what expired, then purges the runs of a recurring file beyond the seven newest', async () => {
    // Nine runs of one product, put through the API as a recurring file is, sent long ago.
    for (let run = 1; run <= 9; run++) await put({ target: 'forecast.grib', uniquename: `run${run}` });
    await h.db.execute(sql`update data_transfers set status = 'DONE', created_at = now() - interval '1 hour'`);
    // A tenth run that can no longer be sent in time.
    await put({ target: 'forecast.grib', uniquename: 'run10', lifetime: '1m' });
    await h.db.execute(sql`update data_transfers set expires_at = now() - interval '1 minute',
      created_at = now() - interval '1 hour' where unique_name = 'run10'`);

    const { expired, purged } = await sweep(h.ports, LIMITS);

    expect(expired).toBe(1);
    expect(purged).toMatchObject({ transfers: 3, dataFiles: 3 });
    const left = await transfers();
    expect(left.map((t) => t.unique_name)).toEqual(['run4', 'run5', 'run6', 'run7', 'run8', 'run9', 'run10']);
    expect(left.at(-1)!.status).toBe('FAIL');
    const history = await h.db.execute(sql`select count(*) as n from transfer_history h
      where not exists (select 1 from data_transfers t where t.id = h.transfer_id)`);
    expect(Number(rowsOf<{ n: string | number }>(history)[0]!.n)).toBe(0);
  });
});
