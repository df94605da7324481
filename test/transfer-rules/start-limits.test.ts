import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endAttempt } from '../../core/dissemination/attempts.ts';
import { type ClaimRequest, claimTransfers, finishAttempt } from '../../core/dissemination/claims.ts';
import { initialState } from '../../core/dissemination/failover.ts';
import { changeTransfer } from '../../core/dissemination/manual.ts';
import type { ClaimedTransfer, DisseminationHost, DueDestination } from '../../core/dissemination/ports.ts';
import { decideStartLimit, shortTime } from '../../core/dissemination/start-limits.ts';
import { dataTransfers, destinationRequeues, destinations, transferHistory } from '../../db/schema.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * The reference's start and requeue limits (maxStart, startFrequency, maxRequeue) as the claim
 * applies them, and the reschedule after a DONE that follows a requeue, on the database the suite
 * runs on (PGlite, or Postgres with TEST_DATABASE_URL).
 */
let h: Harness;
let pipeline: string;
let root: string;
let now = new Date('2031-03-01T12:00:00.000Z');
const MINUTE = 60_000;

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-limits-')));
  fs.writeFileSync(path.join(root, 'a.grib'), 'grib!');
  h = await createHarness({ sourceRoots: [root] });
  h.ports.clock = () => now;
  pipeline = await h.client('pipeline', ['datafile.*']);
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

type Limits = { maxStart?: number | null; startFrequency?: number | null; maxRequeue?: number | null };
let count = 0;
async function destinationWith(limits: Limits, files: number) {
  const name = `LIMITS_${++count}`;
  await h.db.insert(destinations).values({ name, countryIso: 'gb', type: 1, statusCode: 'WAIT', ...limits });
  const ids: number[] = [];
  for (let i = 0; i < files; i++) {
    const query = new URLSearchParams({ destination: name, source: path.join(root, 'a.grib'), target: `f${i}` });
    const r = await h.call('GET', `/v1/datafile/put?${query}`, { auth: pipeline });
    expect(r.status, r.text).toBe(200);
    const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
    ids.push(t!.id);
  }
  return { name, ids };
}
const request = (destination: string, over: Partial<ClaimRequest> = {}): ClaimRequest => ({
  destination,
  hostId: 'H1',
  mover: 'm1',
  destinationMax: -1,
  hostMax: -1,
  leaseMs: 60_000,
  wanted: 10,
  ...over,
});
const row = async (id: number) => (await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id)))[0]!;
const history = async (id: number) =>
  (
    await h.db.select().from(transferHistory).where(eq(transferHistory.transferId, id)).orderBy(asc(transferHistory.id))
  ).map((r) => [r.status, r.comment, r.error]);
const requeued = async (name: string) =>
  (await h.db.select().from(destinationRequeues).where(eq(destinationRequeues.destination, name))).length === 1;

/** One attempt that fails: claimed, then ended RETR due at once (as a failure that moves to the next host). */
async function failOnce(name: string) {
  const [claimed] = await claimTransfers(h.ports, request(name, { wanted: 1 }));
  expect(claimed, 'a transfer was started').toBeDefined();
  const outcome = { status: 'RETR' as const, sent: 0, queueAt: now, message: 'refused', requeueComment: 'Requeued' };
  expect(await finishAttempt(h.ports, 'm1', claimed!, outcome)).toBe(true);
  return claimed!;
}

const host: DisseminationHost = {
  hostId: 'H1',
  module: 'test',
  host: 'localhost',
  login: '',
  passwdSealed: null,
  dir: '',
  data: '',
  maxConnections: -1,
  retryCount: null,
  retryFrequency: null,
  network: 'Internet',
};
const due = (name: string): DueDestination => ({
  name,
  typeLabel: 'Test',
  maxConnections: -1,
  retry: { retryCount: null, retryFrequency: null, onHostFailure: null, resetFrequency: null },
  hosts: [host],
  state: initialState(),
});
/** An attempt delivered, ended as a mover ends it (the DONE's transaction). */
const deliver = (name: string, transfer: ClaimedTransfer) =>
  endAttempt(
    h.ports,
    { mover: 'm1', transfer, destination: due(name), host, protocol: 'test' },
    {
      kind: 'delivered',
      sent: 5,
      md5: null,
    },
  );

describe('the start limit (maxStart) at the claim', () => {
  it('requeues a transfer started maxStart times, delayed by startFrequency, with the reference comment', async () => {
    const { name, ids } = await destinationWith({ maxStart: 2, startFrequency: 5 * MINUTE }, 1);
    await failOnce(name);
    await failOnce(name);
    expect(await row(ids[0]!)).toMatchObject({ status: 'RETR', startCount: 2, requeueCount: 0 });
    // The third start is not made: the claim requeues it instead, and hands out nothing.
    expect(await claimTransfers(h.ports, request(name))).toEqual([]);
    const delayed = await row(ids[0]!);
    expect(delayed).toMatchObject({ status: 'RETR', startCount: 0, requeueCount: 1, requeueHistory: 1, mover: null });
    expect(delayed.queueAt).toEqual(new Date(now.getTime() + 5 * MINUTE));
    expect(delayed.message).toBe('Maximum start limit reached (delayed until Mar 01 12:05:00)');
    expect((await history(ids[0]!)).at(-1)).toEqual([
      'RETR',
      'Maximum start limit reached (delayed until Mar 01 12:05:00)',
      false,
    ]);
    expect(await requeued(name)).toBe(true);
    // Until its new queue time nothing starts it; then it starts again, counted from 1.
    now = new Date(now.getTime() + 5 * MINUTE - 1);
    expect(await claimTransfers(h.ports, request(name))).toEqual([]);
    now = new Date(now.getTime() + 1);
    const [again] = await claimTransfers(h.ports, request(name));
    expect(again?.id).toBe(ids[0]);
    expect(await row(ids[0]!)).toMatchObject({ status: 'EXEC', startCount: 1, requeueCount: 1 });
  });

  it('fails the transfer once its requeues reach maxRequeue, with the reference comment and an error row', async () => {
    const { name, ids } = await destinationWith({ maxStart: 1, startFrequency: MINUTE, maxRequeue: 2 }, 1);
    await failOnce(name);
    expect(await claimTransfers(h.ports, request(name))).toEqual([]);
    expect(await row(ids[0]!)).toMatchObject({ status: 'RETR', requeueCount: 1 });
    now = new Date(now.getTime() + MINUTE);
    await failOnce(name);
    expect(await claimTransfers(h.ports, request(name))).toEqual([]);
    const failed = await row(ids[0]!);
    expect(failed).toMatchObject({ status: 'FAIL', startCount: 0, requeueCount: 2, requeueHistory: 2 });
    expect(failed.message).toBe('Maximum requeue limit reached (stopped after 2 attempt(s))');
    expect((await history(ids[0]!)).at(-1)).toEqual([
      'FAIL',
      'Maximum requeue limit reached (stopped after 2 attempt(s))',
      true,
    ]);
    now = new Date(now.getTime() + 60 * MINUTE);
    expect(await claimTransfers(h.ports, request(name))).toEqual([]);
  });

  it('applies the reference defaults (maxStart 2, startFrequency 10 min, no requeue limit)', async () => {
    const { name, ids } = await destinationWith({}, 1);
    for (let round = 1; round <= 3; round++) {
      await failOnce(name);
      await failOnce(name);
      expect(await claimTransfers(h.ports, request(name))).toEqual([]);
      const delayed = await row(ids[0]!);
      expect(delayed).toMatchObject({ status: 'RETR', requeueCount: round });
      expect(delayed.queueAt).toEqual(new Date(now.getTime() + 10 * MINUTE));
      now = new Date(now.getTime() + 10 * MINUTE);
    }
  });

  it('sets no limit when maxStart is 0 or below', async () => {
    const { name, ids } = await destinationWith({ maxStart: 0, maxRequeue: 1 }, 1);
    for (let i = 0; i < 5; i++) await failOnce(name);
    expect(await row(ids[0]!)).toMatchObject({ status: 'RETR', startCount: 5, requeueCount: 0 });
  });

  it('starts the next due transfer in the place of one requeued at its limit', async () => {
    const { name, ids } = await destinationWith({ maxStart: 1 }, 2);
    await failOnce(name);
    const [next] = await claimTransfers(h.ports, request(name, { wanted: 1 }));
    expect(next?.id).toBe(ids[1]);
    expect(await row(ids[0]!)).toMatchObject({ status: 'RETR', requeueCount: 1 });
  });

  it('counts the limits afresh after a manual requeue', async () => {
    const { name, ids } = await destinationWith({ maxStart: 1, maxRequeue: 1 }, 1);
    await failOnce(name);
    expect(await claimTransfers(h.ports, request(name))).toEqual([]);
    expect((await row(ids[0]!)).status).toBe('FAIL');
    expect(await changeTransfer(h.ports, 'operator', ids[0]!, 'requeue')).toBe('RETR');
    expect(await row(ids[0]!)).toMatchObject({ status: 'RETR', startCount: 0, requeueCount: 0, requeueHistory: 1 });
    const [again] = await claimTransfers(h.ports, request(name));
    expect(again?.id).toBe(ids[0]);
  });
});

describe('the reschedule after a DONE that follows a requeue', () => {
  it("gives the destination's requeued transfers their scheduled time back, once", async () => {
    const { name, ids } = await destinationWith({ maxStart: 1, startFrequency: 30 * MINUTE }, 3);
    const [a, b, c] = ids as [number, number, number];
    await failOnce(name); // a
    const [claimedB] = await claimTransfers(h.ports, request(name, { wanted: 1 })); // a delayed, b started
    expect(claimedB?.id).toBe(b);
    expect(await requeued(name)).toBe(true);
    const scheduledA = (await row(a)).scheduledAt;
    expect((await row(a)).queueAt).toEqual(new Date(now.getTime() + 30 * MINUTE));

    expect(await deliver(name, claimedB!)).toBe(true);
    expect((await row(b)).status).toBe('DONE');
    const back = await row(a);
    expect(back).toMatchObject({ status: 'RETR', requeueHistory: 1 });
    expect(back.queueAt).toEqual(scheduledA);
    expect(await requeued(name)).toBe(false);
    // Due again at once: the next claim takes it before c (same priority and queue time, lower id).
    const [first] = await claimTransfers(h.ports, request(name, { wanted: 1 }));
    expect(first?.id).toBe(a);
    expect((await row(c)).status).toBe('WAIT');
  });

  it('leaves queue times alone after a DONE when nothing was requeued at the start limit', async () => {
    const { name, ids } = await destinationWith({ maxStart: 3 }, 2);
    const [a, b] = ids as [number, number];
    const [claimedA] = await claimTransfers(h.ports, request(name, { wanted: 1 }));
    const later = new Date(now.getTime() + 15 * MINUTE);
    const outcome = {
      status: 'RETR' as const,
      sent: 0,
      queueAt: later,
      message: 'refused',
      requeueComment: 'Requeued',
    };
    await finishAttempt(h.ports, 'm1', claimedA!, outcome);
    const [claimedB] = await claimTransfers(h.ports, request(name, { wanted: 1 }));
    expect(claimedB?.id).toBe(b);
    expect(await deliver(name, claimedB!)).toBe(true);
    expect((await row(a)).queueAt).toEqual(later);
  });
});

describe('decideStartLimit', () => {
  const at = new Date('2031-12-05T03:04:05.678Z');
  it('writes the delay as the reference does (MMM dd HH:mm:ss)', () => {
    expect(shortTime(at)).toBe('Dec 05 03:04:05');
  });
  it('lets a transfer below its limit start, and decides the rest as the reference', () => {
    const limits = { maxStart: 3, startFrequency: 1000, maxRequeue: 2 };
    expect(decideStartLimit({ startCount: 2, requeueCount: 0 }, limits, at)).toBeNull();
    expect(decideStartLimit({ startCount: 3, requeueCount: 0 }, limits, at)).toEqual({
      status: 'RETR',
      requeueCount: 1,
      queueAt: new Date(at.getTime() + 1000),
      comment: 'Maximum start limit reached (delayed until Dec 05 03:04:06)',
    });
    expect(decideStartLimit({ startCount: 3, requeueCount: 1 }, limits, at)).toMatchObject({ status: 'FAIL' });
    expect(decideStartLimit({ startCount: 9, requeueCount: 9 }, { ...limits, maxRequeue: 0 }, at)).toMatchObject({
      status: 'RETR',
      requeueCount: 10,
    });
  });
});
