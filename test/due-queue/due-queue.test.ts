import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq, sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settleStaleDestinations } from '../../core/dissemination/claims.ts';
import { changeTransfer } from '../../core/dissemination/manual.ts';
import { rowsOf } from '../../db/client.ts';
import { dataTransfers, destinationQueue } from '../../db/schema.ts';
import { restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * The due queue the movers' look reads (destination_queue): a destination enters it when one of
 * its transfers starts waiting, at that transfer's queue time; the look sees only those whose time
 * has come; a destination left with nothing due is settled (its time raised, or taken out), never
 * past a transfer that waits, even one a put has not committed yet.
 */
let h: Harness;
let admin: string;
let sources: string;
const url = process.env.TEST_DATABASE_URL;

beforeAll(async () => {
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-due-queue-')));
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('operator', ['.*']);
});
afterAll(async () => {
  await h.close();
  fs.rmSync(sources, { recursive: true, force: true });
});

let files = 0;
async function put(destination: string, query: Record<string, string> = {}) {
  const file = path.join(sources, `f${++files}.bin`);
  fs.writeFileSync(file, 'x'.repeat(100));
  const q = new URLSearchParams({ destination, source: file, target: `t${files}.bin`, ...query });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return t!;
}
const dueNames = async (at = new Date()) =>
  (await h.ports.repos.dissemination.dueDestinations(at, 100)).map((d) => d.name);
const queued = async (destination: string) =>
  (await h.db.select().from(destinationQueue).where(eq(destinationQueue.destination, destination)))[0]?.nextAt ?? null;

describe('the due queue', () => {
  it('holds a destination from its first waiting transfer, at that queue time, and the look finds it', async () => {
    await restoreDestination(h, admin, 'DQ_PUT', [{ method: 'test' }]);
    expect(await queued('DQ_PUT')).toBeNull();
    const t = await put('DQ_PUT');
    expect((await queued('DQ_PUT'))?.getTime()).toBe(t.queueAt.getTime());
    expect(await dueNames()).toContain('DQ_PUT');
  });

  it('leaves out of the look a destination whose transfers all wait for a later time, until it comes', async () => {
    await restoreDestination(h, admin, 'DQ_LATER', [{ method: 'test' }]);
    const t = await put('DQ_LATER', { at: '+1h' });
    expect(t.queueAt.getTime()).toBeGreaterThan(Date.now());
    expect(await dueNames()).not.toContain('DQ_LATER');
    expect(await dueNames(new Date(t.queueAt.getTime() + 1000))).toContain('DQ_LATER');
  });

  it('settles a destination left with nothing due: taken out, then back with its next transfer', async () => {
    await restoreDestination(h, admin, 'DQ_HELD', [{ method: 'test' }]);
    const t = await put('DQ_HELD');
    await changeTransfer(h.ports, 'test', t.id, 'hold');
    expect(await queued('DQ_HELD')).not.toBeNull();
    expect(await h.ports.repos.dissemination.staleInDueQueue(new Date(), 100)).toContain('DQ_HELD');
    await settleStaleDestinations(h.ports);
    expect(await queued('DQ_HELD')).toBeNull();
    expect(await dueNames()).not.toContain('DQ_HELD');
    // A requeue makes it wait again: the trigger puts the destination back.
    await changeTransfer(h.ports, 'test', t.id, 'requeue');
    expect(await queued('DQ_HELD')).not.toBeNull();
    expect(await dueNames()).toContain('DQ_HELD');
  });

  it('raises a settled time to the earliest transfer still waiting, not beyond', async () => {
    await restoreDestination(h, admin, 'DQ_RAISE', [{ method: 'test' }]);
    const now = await put('DQ_RAISE');
    const next = await put('DQ_RAISE', { at: '+2h' });
    await changeTransfer(h.ports, 'test', now.id, 'hold');
    await settleStaleDestinations(h.ports);
    expect((await queued('DQ_RAISE'))?.getTime()).toBe(next.queueAt.getTime());
    expect(await dueNames()).not.toContain('DQ_RAISE');
  });

  it.skipIf(!url)('never raises a time past a transfer a put has not committed yet', async () => {
    await restoreDestination(h, admin, 'DQ_RACE', [{ method: 'test' }]);
    const t = await put('DQ_RACE');
    await changeTransfer(h.ports, 'test', t.id, 'hold');
    // Another session registers a waiting transfer and has not committed when the settle runs.
    const other = postgres((h.handle as { url?: string }).url ?? url!, { max: 1, onnotice: () => undefined });
    try {
      await other.begin(async (tx) => {
        await tx`update data_transfers set status = 'WAIT' where id = ${t.id}`;
        await settleStaleDestinations(h.ports);
        // The settle could not see the transfer and left the destination alone.
        expect(await queued('DQ_RACE')).not.toBeNull();
      });
      expect(await dueNames()).toContain('DQ_RACE');
    } finally {
      await other.end();
    }
  });

  it('is in step after every kind of change a transfer goes through on its way', async () => {
    // Every waiting transfer's destination is queued at or before its queue time.
    const rows = await h.db.execute(sql`
      select count(*)::int as n from data_transfers t
      where t.status in ('WAIT', 'RETR', 'INTR') and t.mover is null
        and not exists (select 1 from destination_queue q where q.destination = t.destination
          and q.next_at <= t.queue_at)`);
    expect(rowsOf<{ n: number }>(rows)[0]?.n).toBe(0);
  });
});
