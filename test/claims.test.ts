import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { and, asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ClaimRequest,
  claimTransfers,
  finishAttempt,
  reclaimLapsedAttempts,
  renewLeases,
} from '../core/dissemination/claims.ts';
import { dataFiles, dataTransfers, transferHistory } from '../db/schema.ts';
import { createHarness, type Harness } from './support/harness.ts';

/** Claims and finishes on the database the suite runs on (PGlite, or Postgres with TEST_DATABASE_URL). */
let h: Harness;
let pipeline: string;
let root: string;
const T0 = new Date('2031-03-01T12:00:00.000Z');

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-claims-')));
  fs.writeFileSync(path.join(root, 'a.grib'), 'grib!');
  h = await createHarness({ sourceRoots: [root] });
  h.ports.clock = () => T0;
  pipeline = await h.client('pipeline', ['datafile.*']);
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

let destinations = 0;
async function destinationWith(puts: Array<Record<string, string>>) {
  const name = `CLAIMS_${++destinations}`;
  await h.addDestination(name);
  const ids: number[] = [];
  for (const [i, q] of puts.entries()) {
    const query = new URLSearchParams({ destination: name, source: path.join(root, 'a.grib'), target: `f${i}`, ...q });
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
const statusOf = async (id: number) => (await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id)))[0]!;
const historyOf = async (id: number) =>
  (
    await h.db.select().from(transferHistory).where(eq(transferHistory.transferId, id)).orderBy(asc(transferHistory.id))
  ).map((r) => [r.status, r.hostId, r.error]);

describe('claiming due transfers', () => {
  it('takes due transfers by priority, queue time and id, and writes EXEC with its history', async () => {
    const { name, ids } = await destinationWith([
      { priority: '50' },
      { priority: '10' },
      { priority: '50' },
      { priority: '1', standby: 'true' },
      { priority: '1', at: '+1h' },
    ]);
    const claimed = await claimTransfers(h.ports, request(name));
    expect(claimed.map((c) => c.id)).toEqual([ids[1], ids[0], ids[2]]);
    expect(claimed[0]).toMatchObject({ attempt: 1, destination: name, target: 'f1', size: 5 });
    expect(claimed[0]!.source).toBe(path.join(root, 'a.grib'));
    const row = await statusOf(ids[1]!);
    expect(row).toMatchObject({ status: 'EXEC', mover: 'm1', attempt: 1, hostId: 'H1', startedAt: T0 });
    expect(row.leaseUntil).toEqual(new Date(T0.getTime() + 60_000));
    expect(await historyOf(ids[1]!)).toEqual([
      ['WAIT', null, false],
      ['EXEC', 'H1', false],
    ]);
    expect((await statusOf(ids[3]!)).status).toBe('HOLD');
    expect((await statusOf(ids[4]!)).status).toBe('WAIT');
    expect(await claimTransfers(h.ports, request(name))).toEqual([]);
  });

  it("never exceeds the destination's or the host's maxConnections, nor what the mover wants", async () => {
    const { name } = await destinationWith([{}, {}, {}, {}, {}]);
    expect(await claimTransfers(h.ports, request(name, { wanted: 1 }))).toHaveLength(1);
    expect(await claimTransfers(h.ports, request(name, { destinationMax: 2 }))).toHaveLength(1);
    expect(await claimTransfers(h.ports, request(name, { destinationMax: 2 }))).toHaveLength(0);
    expect(await claimTransfers(h.ports, request(name, { hostId: 'H2', hostMax: 1 }))).toHaveLength(1);
    expect(await claimTransfers(h.ports, request(name, { hostId: 'H2', hostMax: 1 }))).toHaveLength(0);
    expect(await claimTransfers(h.ports, request(name, { destinationMax: 0 }))).toHaveLength(0);
    expect(await claimTransfers(h.ports, request(name, { destinationMax: null, hostId: 'H3' }))).toHaveLength(0);
  });

  it('hands out each transfer once to claims made at the same time, within the limit', async () => {
    const { name } = await destinationWith(Array.from({ length: 8 }, () => ({})));
    const movers = Array.from({ length: 6 }, (_, i) => `m${i}`);
    const claims = await Promise.all(
      movers.map((mover) => claimTransfers(h.ports, request(name, { mover, destinationMax: 3 }))),
    );
    const ids = claims.flat().map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBeLessThanOrEqual(3);
    const running = await h.db
      .select()
      .from(dataTransfers)
      .where(and(eq(dataTransfers.destination, name), eq(dataTransfers.status, 'EXEC')));
    expect(running).toHaveLength(ids.length);
  });

  it('leaves expired transfers to the sweep', async () => {
    const { name } = await destinationWith([{ lifetime: '1m' }]);
    const later = h.ports.clock;
    h.ports.clock = () => new Date(T0.getTime() + 120_000);
    try {
      expect(await claimTransfers(h.ports, request(name))).toEqual([]);
    } finally {
      h.ports.clock = later;
    }
  });
});

describe('finishing an attempt', () => {
  it('writes DONE with its history and keeps the MD5 on the data file', async () => {
    const { name, ids } = await destinationWith([{}]);
    const [claimed] = await claimTransfers(h.ports, request(name));
    expect(
      await finishAttempt(h.ports, 'm1', claimed!, { status: 'DONE', sent: 5, md5: 'abc123', comment: 'Sent 5 bytes' }),
    ).toBe(true);
    expect(await statusOf(ids[0]!)).toMatchObject({ status: 'DONE', mover: null, leaseUntil: null, sent: 5 });
    expect((await statusOf(ids[0]!)).finishedAt).toEqual(T0);
    expect(await historyOf(ids[0]!)).toEqual([
      ['WAIT', null, false],
      ['EXEC', 'H1', false],
      ['DONE', 'H1', false],
    ]);
    const [file] = await h.db.select().from(dataFiles).where(eq(dataFiles.id, claimed!.dataFileId));
    expect(file!.checksum).toBe('abc123');
  });

  it('writes RETR with the next queue time, after which the transfer is due again with a new attempt', async () => {
    const { name, ids } = await destinationWith([{}]);
    const [claimed] = await claimTransfers(h.ports, request(name));
    const queueAt = new Date(T0.getTime() + 15_000);
    const failed = {
      status: 'RETR' as const,
      sent: 2,
      queueAt,
      message: 'Connection refused',
      requeueComment: 'Requeued',
    };
    expect(await finishAttempt(h.ports, 'm1', claimed!, failed)).toBe(true);
    expect(await statusOf(ids[0]!)).toMatchObject({ status: 'RETR', queueAt, message: 'Connection refused' });
    // As the reference writes a failure: STOP with the error, then RETR.
    expect((await historyOf(ids[0]!)).slice(-2)).toEqual([
      ['STOP', 'H1', true],
      ['RETR', 'H1', false],
    ]);
    expect(await claimTransfers(h.ports, request(name))).toEqual([]);
    const now = h.ports.clock;
    h.ports.clock = () => queueAt;
    try {
      const [again] = await claimTransfers(h.ports, request(name, { mover: 'm2' }));
      expect(again).toMatchObject({ id: ids[0], attempt: 2 });
    } finally {
      h.ports.clock = now;
    }
  });

  it('changes nothing for a mover that no longer owns the attempt', async () => {
    const { name, ids } = await destinationWith([{}]);
    const [claimed] = await claimTransfers(h.ports, request(name));
    const before = await historyOf(ids[0]!);
    const done = { status: 'DONE' as const, sent: 5, md5: 'x', comment: 'Sent 5 bytes' };
    expect(await finishAttempt(h.ports, 'm2', claimed!, done)).toBe(false);
    expect(await finishAttempt(h.ports, 'm1', { ...claimed!, attempt: claimed!.attempt + 1 }, done)).toBe(false);
    const r = await h.call('DELETE', `/v1/datafile/del?id=${claimed!.dataFileId}`, { auth: pipeline });
    expect(r.status, r.text).toBe(200);
    expect(await finishAttempt(h.ports, 'm1', claimed!, done)).toBe(false);
    expect((await statusOf(ids[0]!)).status).toBe('STOP');
    // The delete ended the running attempt first: INTR, then STOP.
    expect(await historyOf(ids[0]!)).toEqual([...before, ['INTR', null, false], ['STOP', null, false]]);
  });
});

describe('leases', () => {
  it('renews the leases a mover holds, and leaves out a transfer taken away from it', async () => {
    const { name, ids } = await destinationWith([{}, {}]);
    const claimed = await claimTransfers(h.ports, request(name, { mover: 'renewer' }));
    expect(claimed).toHaveLength(2);
    const keys = claimed.map((c) => ({ id: c.id, attempt: c.attempt }));
    const ofIds = (renewed: Array<{ id: number }>) => renewed.map((r) => r.id).sort();
    expect(ofIds(await renewLeases(h.ports, 'renewer', 90_000, keys))).toEqual([...ids].sort());
    expect((await statusOf(ids[0]!)).leaseUntil).toEqual(new Date(T0.getTime() + 90_000));
    const r = await h.call('DELETE', `/v1/datafile/del?id=${claimed[0]!.dataFileId}`, { auth: pipeline });
    expect(r.status, r.text).toBe(200);
    expect(ofIds(await renewLeases(h.ports, 'renewer', 90_000, keys))).toEqual([claimed[1]!.id]);
    // An earlier attempt of a transfer is not this one: its lease is not renewed.
    expect(await renewLeases(h.ports, 'renewer', 90_000, [{ ...keys[1]!, attempt: keys[1]!.attempt - 1 }])).toEqual([]);
  });

  it('renews only the transfers the mover says it is sending, so one it lost track of lapses', async () => {
    const { name, ids } = await destinationWith([{}, {}]);
    const claimed = await claimTransfers(h.ports, request(name, { mover: 'forgetful', leaseMs: 1000 }));
    expect(claimed).toHaveLength(2);
    const second = claimed.find((c) => c.id === ids[1])!;
    const key = { id: second.id, attempt: second.attempt };
    expect(await renewLeases(h.ports, 'forgetful', 90_000, [key])).toEqual([key]);
    expect((await statusOf(ids[0]!)).leaseUntil).toEqual(new Date(T0.getTime() + 1000));
    expect((await statusOf(ids[1]!)).leaseUntil).toEqual(new Date(T0.getTime() + 90_000));
    expect(await renewLeases(h.ports, 'forgetful', 90_000, [])).toEqual([]);
  });

  it('gives back the transfers of a lost mover, INTR then RETR, and fences its late finish', async () => {
    const { name, ids } = await destinationWith([{}]);
    const [claimed] = await claimTransfers(h.ports, request(name, { mover: 'lost', leaseMs: 30_000 }));
    expect(await reclaimLapsedAttempts(h.ports)).toBe(0);
    const now = h.ports.clock;
    h.ports.clock = () => new Date(T0.getTime() + 30_001);
    try {
      expect(await reclaimLapsedAttempts(h.ports)).toBeGreaterThanOrEqual(1);
      expect(await statusOf(ids[0]!)).toMatchObject({ status: 'RETR', mover: null, leaseUntil: null });
      expect((await historyOf(ids[0]!)).slice(-2)).toEqual([
        ['INTR', 'H1', true],
        ['RETR', 'H1', false],
      ]);
      expect(
        await finishAttempt(h.ports, 'lost', claimed!, { status: 'DONE', sent: 5, md5: 'x', comment: 'Sent 5 bytes' }),
      ).toBe(false);
      const [again] = await claimTransfers(h.ports, request(name, { mover: 'other' }));
      expect(again).toMatchObject({ id: ids[0], attempt: 2 });
      expect(
        await finishAttempt(h.ports, 'other', again!, { status: 'DONE', sent: 5, md5: 'x', comment: 'Sent 5 bytes' }),
      ).toBe(true);
      const dones = (await historyOf(ids[0]!)).filter(([status]) => status === 'DONE');
      expect(dones).toHaveLength(1);
    } finally {
      h.ports.clock = now;
    }
  });
});
