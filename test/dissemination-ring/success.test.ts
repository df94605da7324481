import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Attempt, decideOutcome, deliveredOutcome } from '../../core/dissemination/outcome.ts';
import type { DisseminationHost, DueDestination, StoredFailover } from '../../core/dissemination/ports.ts';
import { destinationState } from '../../db/schema.ts';
import { restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * A delivered file's end writes the ring in one statement, with no read before it: what it leaves
 * must be what the ring's rules (afterSuccess, as decideOutcome applies it to the ring it read)
 * would have written, whatever the ring held.
 */
let h: Harness;
let admin: string;
beforeAll(async () => {
  h = await createHarness();
  admin = await h.client('operator', ['.*']);
});
afterAll(() => h.close());

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

function attemptOn(name: string, used: number, onHostFailure: number): Attempt {
  const hosts = [host('p'), host('b1'), host('b2')];
  const destination = {
    name,
    hosts,
    retry: { retryCount: 1, retryFrequency: 1000, onHostFailure, resetFrequency: 0 },
  } as unknown as DueDestination;
  const now = new Date();
  const transfer = {
    id: 1,
    attempt: 1,
    target: 't',
    priority: 99,
    queueAt: now,
    startedAt: now,
  } as Attempt['transfer'];
  return { mover: 'm', transfer, destination, host: hosts[used]!, protocol: 'test' };
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
        const attempt = attemptOn(name, c.used, c.onHostFailure);
        const now = new Date();
        const result = { kind: 'delivered' as const, sent: 10, md5: null };
        const read = existing ? before : { state: { hostIndex: 0, hostFailures: 0, rounds: 0, leftPrimaryAt: null } };
        const expected = decideOutcome(attempt, result, { pausedUntil: null, pauseReason: null, ...read }, now).ring;
        const { success } = deliveredOutcome(attempt, result, now);
        await h.ports.repos.dissemination.recordSuccess(name, success, { at: now, hostId: attempt.host.hostId });
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
