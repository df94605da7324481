import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { dataTransfers, destinations } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { testMethod } from '../../functions/transfer-methods/test.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/** A mover leaves a destination alone outside its scheduler.activeTimeRange, and sends once it opens. */
let h: Harness;
let admin: string;
let sources: string;
let mover: Mover | undefined;

beforeAll(async () => {
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-range-src-')));
  fs.writeFileSync(path.join(sources, 'f.bin'), 'range');
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('operator', ['.*']);
});
afterAll(async () => {
  await mover?.stop(2000);
  await h.close();
  fs.rmSync(sources, { recursive: true, force: true });
});

/** A one-hour range of the day that starts two hours from now (never one that spans midnight). */
function closedRange(now: Date) {
  let start = (now.getUTCHours() + 2) % 24;
  if (start >= 22) start = 1;
  const hh = (n: number) => String(n).padStart(2, '0');
  return `${hh(start)}:00-${hh(start + 1)}:00`;
}

it('starts no transfer of the destination outside its range; the claim takes it once the range holds', async () => {
  const range = closedRange(h.ports.clock());
  await restoreDestination(h, admin, 'PR_CLOSED', [{ method: 'test' }], {
    destination: { data: `scheduler.activeTimeRange = "${range}"` },
  });
  const q = new URLSearchParams({ destination: 'PR_CLOSED', source: path.join(sources, 'f.bin') });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  mover = startMover(
    { ports: h.ports, methods: { test: testMethod() }, sources: nodeSourceReader({ roots: [sources], hosts: [] }) },
    { name: 'range', concurrency: 4, leaseMs: 1500, heartbeatMs: 150, pollMs: 40 },
  );
  const statusOf = async () =>
    (await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id)))[0]!.status;
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect(await statusOf()).toBe('WAIT');
  await h.db
    .update(destinations)
    .set({ data: 'scheduler.activeTimeRange = "00:00:00-23:59:59"' })
    .where(eq(destinations.name, 'PR_CLOSED'));
  mover.wake();
  await eventually(async () => ((await statusOf()) === 'DONE' ? true : undefined), 10_000, 'DONE');
});

it('closes a destination at the next look once a range is set on it while the mover runs', async () => {
  await restoreDestination(h, admin, 'PR_LATER', [{ method: 'test' }]);
  const put = async (name: string) => {
    fs.writeFileSync(path.join(sources, name), name);
    const q = new URLSearchParams({ destination: 'PR_LATER', source: path.join(sources, name) });
    const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
    expect(r.status, r.text).toBe(200);
    return r.json.id as number;
  };
  const statusOf = async (id: number) =>
    (await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, id)))[0]!.status;
  // The mover has looked (and read the ranges) before the option appears: the first file goes.
  const first = await put('first.bin');
  mover?.wake();
  await eventually(async () => ((await statusOf(first)) === 'DONE' ? true : undefined), 10_000, 'first DONE');
  await h.db
    .update(destinations)
    .set({ data: `scheduler.activeTimeRange = "${closedRange(h.ports.clock())}"` })
    .where(eq(destinations.name, 'PR_LATER'));
  const second = await put('second.bin');
  mover?.wake();
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect(await statusOf(second)).toBe('WAIT');
});
