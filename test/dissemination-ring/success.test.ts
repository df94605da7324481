import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endDelivered } from '../../core/dissemination/attempts.ts';
import { claimTransfers } from '../../core/dissemination/claims.ts';
import { type Attempt, decideOutcome } from '../../core/dissemination/outcome.ts';
import type { DisseminationHost, DueDestination, StoredFailover } from '../../core/dissemination/ports.ts';
import { destinationState } from '../../db/schema.ts';
import { restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * A delivered file's end writes the ring in one statement, with no read before it: what it leaves
 * must be what the ring's rules (afterSuccess, as decideOutcome applies it to the ring it read)
 * would have written, whatever the ring held. Ends written together leave what they would have
 * left one after the other.
 */
let h: Harness;
let admin: string;
let root: string;
beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-ring-')));
  fs.writeFileSync(path.join(root, 'a.grib'), 'grib!');
  h = await createHarness({ sourceRoots: [root] });
  admin = await h.client('operator', ['.*']);
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const host = (hostId: string): DisseminationHost => ({
  hostId,
  module: 'test',
  host: 'h',
  login: '',
  passwdSealed: null,
  dir: '',
  data: '',
  maxConnections: null,
  retryCount: null,
  retryFrequency: null,
  network: null,
  filterName: null,
});

/** A transfer of the destination registered and claimed by mover `m`: an attempt through host `used`. */
async function attemptOn(name: string, used: number, onHostFailure: number): Promise<Attempt> {
  const hosts = [host('p'), host('b1'), host('b2')];
  const destination = {
    name,
    hosts,
    retry: { retryCount: 1, retryFrequency: 1000, onHostFailure, resetFrequency: 0 },
  } as unknown as DueDestination;
  const query = new URLSearchParams({
    destination: name,
    source: path.join(root, 'a.grib'),
    target: `t${Math.random()}`,
  });
  const put = await h.call('GET', `/v1/datafile/put?${query}`, { auth: admin });
  expect(put.status, put.text).toBe(200);
  const [transfer] = await claimTransfers(h.ports, {
    destination: name,
    hostId: hosts[used]!.hostId,
    mover: 'm',
    destinationMax: -1,
    hostMax: -1,
    leaseMs: 60_000,
    wanted: 1,
  });
  expect(transfer, 'a transfer was claimed').toBeDefined();
  return { mover: 'm', transfer: transfer!, destination, host: hosts[used]!, protocol: 'test' };
}

const stateOf = async (name: string) => {
  const [row] = await h.db.select().from(destinationState).where(eq(destinationState.destination, name));
  return row!;
};

describe("a delivered file's end, in the ring", () => {
  const before: StoredFailover = {
    state: { hostIndex: 2, hostFailures: 1, rounds: 1, leftPrimaryAt: Date.parse('2026-11-01T00:00:00Z') },
    pausedUntil: new Date('2030-01-01T00:00:00Z'),
    pauseReason: 'retry',
  };
  const cases = [
    { used: 0, onHostFailure: 0, why: 'on the primary' },
    { used: 1, onHostFailure: 0, why: 'on a backup, "next and stay"' },
    { used: 2, onHostFailure: 1, why: 'on a backup, "next and retry"' },
  ];
  for (const [i, c] of cases.entries()) {
    it(`writes what the ring's rules say, ${c.why}, with or without a ring before`, async () => {
      for (const existing of [true, false]) {
        const name = `RING_${i}_${existing}`;
        await restoreDestination(h, admin, name, [{ method: 'test' }]);
        if (existing) {
          await h.db.insert(destinationState).values({
            destination: name,
            ...before.state,
            leftPrimaryAt: new Date(before.state.leftPrimaryAt!),
            pausedUntil: before.pausedUntil,
            pauseReason: before.pauseReason,
          });
        }
        const attempt = await attemptOn(name, c.used, c.onHostFailure);
        const now = new Date();
        h.ports.clock = () => now;
        const result = { kind: 'delivered' as const, sent: 5, md5: null };
        const read = existing ? before : { state: { hostIndex: 0, hostFailures: 0, rounds: 0, leftPrimaryAt: null } };
        const expected = decideOutcome(attempt, result, { pausedUntil: null, pauseReason: null, ...read }, now).ring;
        expect(await endDelivered(h.ports, [{ attempt, result }])).toEqual([true]);
        const row = await stateOf(name);
        expect({
          hostIndex: row.hostIndex,
          hostFailures: row.hostFailures,
          rounds: row.rounds,
          leftPrimaryAt: row.leftPrimaryAt?.getTime() ?? null,
          pausedUntil: row.pausedUntil,
          pauseReason: row.pauseReason,
        }).toEqual({ ...expected.state, pausedUntil: null, pauseReason: null });
        expect(row.lastSuccessAt?.getTime()).toBe(now.getTime());
        expect(row.lastHostId).toBe(attempt.host.hostId);
      }
    });
  }
});

describe('delivered files ended together', () => {
  const before = { hostIndex: 2, hostFailures: 1, rounds: 1, leftPrimaryAt: new Date('2026-11-01T00:00:00Z') };
  const orders = [
    { hosts: [1, 2], onHostFailure: 0, keptLeftPrimary: true, why: 'all away from the primary' },
    { hosts: [1, 0], onHostFailure: 0, keptLeftPrimary: false, why: 'the last on the primary' },
    { hosts: [0, 2], onHostFailure: 0, keptLeftPrimary: false, why: 'an earlier one on the primary' },
  ];
  for (const [i, c] of orders.entries()) {
    it(`leave the ring as the same ends one after the other would, ${c.why}`, async () => {
      const name = `RING_TOGETHER_${i}`;
      await restoreDestination(h, admin, name, [{ method: 'test' }]);
      await h.db.insert(destinationState).values({ destination: name, ...before });
      const attempts = [];
      for (const used of c.hosts) attempts.push(await attemptOn(name, used, c.onHostFailure));
      const result = { kind: 'delivered' as const, sent: 5, md5: null };
      expect(
        await endDelivered(
          h.ports,
          attempts.map((attempt) => ({ attempt, result })),
        ),
      ).toEqual([true, true]);
      const row = await stateOf(name);
      const last = c.hosts.at(-1)!;
      expect(row.hostIndex).toBe(last);
      expect(row.lastHostId).toBe(attempts.at(-1)!.host.hostId);
      expect([row.hostFailures, row.rounds, row.pausedUntil]).toEqual([0, 0, null]);
      expect(row.leftPrimaryAt?.getTime() ?? null).toBe(c.keptLeftPrimary ? before.leftPrimaryAt.getTime() : null);
    });
  }
});
