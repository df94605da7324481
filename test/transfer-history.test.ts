import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpired } from '../core/data-files/handlers.ts';
import { dataTransfers, transferHistory } from '../db/schema.ts';
import { createHarness, type Harness } from './support/harness.ts';

/** Every status change of a transfer leaves its history row, written with the change. */
let h: Harness;
let pipeline: string;
let root: string;

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-history-')));
  fs.writeFileSync(path.join(root, 'a.txt'), 'hello');
  fs.writeFileSync(path.join(root, 'b.txt'), 'hello again');
  h = await createHarness({ sourceRoots: [root] });
  pipeline = await h.client('pipeline', ['datafile.*']);
  await h.addDestination('HISTORY');
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

async function put(q: Record<string, string>) {
  const query = new URLSearchParams({ destination: 'HISTORY', source: path.join(root, 'a.txt'), ...q });
  const r = await h.call('GET', `/v1/datafile/put?${query}`, { auth: pipeline });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return { fileId: r.json.id as number, transferId: t!.id };
}
const historyOf = async (transferId: number) =>
  (
    await h.db
      .select()
      .from(transferHistory)
      .where(eq(transferHistory.transferId, transferId))
      .orderBy(asc(transferHistory.id))
  ).map((r) => ({ destination: r.destination, status: r.status, comment: r.comment, error: r.error }));

describe('transfer history', () => {
  it('records a put, in WAIT or, on standby, in HOLD', async () => {
    const queued = await put({ target: 'queued.txt' });
    const held = await put({ target: 'held.txt', standby: 'true' });
    const row = (status: string) => ({
      destination: 'HISTORY',
      status,
      comment: 'Registered by pipeline',
      error: false,
    });
    expect(await historyOf(queued.transferId)).toEqual([row('WAIT')]);
    expect(await historyOf(held.transferId)).toEqual([row('HOLD')]);
  });

  it('records a forced put of the same key, and nothing for a refused one', async () => {
    const first = await put({ target: 'forced.txt' });
    const refused = await h.call(
      'GET',
      `/v1/datafile/put?${new URLSearchParams({
        destination: 'HISTORY',
        source: path.join(root, 'a.txt'),
        target: 'forced.txt',
      })}`,
      { auth: pipeline },
    );
    expect(refused.status).toBe(500);
    expect(await historyOf(first.transferId)).toHaveLength(1);
    const again = await put({ target: 'forced.txt', force: 'true', source: path.join(root, 'b.txt') });
    expect(again.transferId).toBe(first.transferId);
    expect((await historyOf(first.transferId)).map((r) => [r.status, r.comment])).toEqual([
      ['WAIT', 'Registered by pipeline'],
      ['WAIT', 'Requeued by a forced put'],
    ]);
  });

  it('records the stop of a deleted data file', async () => {
    const doomed = await put({ target: 'deleted.txt' });
    const r = await h.call('DELETE', `/v1/datafile/del?id=${doomed.fileId}`, { auth: pipeline });
    expect(r.status, r.text).toBe(200);
    expect((await historyOf(doomed.transferId)).map((r) => [r.status, r.comment])).toEqual([
      ['WAIT', 'Registered by pipeline'],
      ['STOP', 'Data file deleted'],
    ]);
  });

  it('records the failure of an expired transfer as an error', async () => {
    const late = await put({ target: 'late.txt', lifetime: '1s' });
    const now = h.ports.clock;
    h.ports.clock = () => new Date(Date.now() + 60_000);
    try {
      expect(await sweepExpired(h.ports)).toBeGreaterThanOrEqual(1);
    } finally {
      h.ports.clock = now;
    }
    expect((await historyOf(late.transferId)).at(-1)).toEqual({
      destination: 'HISTORY',
      status: 'FAIL',
      comment: 'File not transferred before expiration',
      error: true,
    });
  });
});
