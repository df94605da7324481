import { describe, expect, it } from 'vitest';
import { freeSlots } from '../core/dissemination/capacity.ts';
import { schedulerStatus } from '../core/dissemination/destination-status.ts';
import {
  afterFailure,
  afterSuccess,
  beforeAttempt,
  DEFAULTS,
  type DestinationRetry,
  type FailoverState,
  initialState,
  JITTER,
} from '../core/dissemination/failover.ts';
import { manualChangeRefusal } from '../core/dissemination/manual.ts';
import type { SchedulerView } from '../core/dissemination/ports.ts';

describe('free slots of a destination and its host', () => {
  it('takes the smaller room of the two limits', () => {
    expect(freeSlots({ destinationMax: 4, destinationRunning: 1, hostMax: 2, hostRunning: 0 })).toBe(2);
    expect(freeSlots({ destinationMax: 4, destinationRunning: 3, hostMax: 5, hostRunning: 0 })).toBe(1);
  });
  it('reads a negative limit as unlimited, zero as blocked and a missing one as 1', () => {
    expect(freeSlots({ destinationMax: -1, destinationRunning: 50, hostMax: -1, hostRunning: 50 })).toBe(Infinity);
    expect(freeSlots({ destinationMax: -1, destinationRunning: 50, hostMax: 3, hostRunning: 1 })).toBe(2);
    expect(freeSlots({ destinationMax: 0, destinationRunning: 0, hostMax: -1, hostRunning: 0 })).toBe(0);
    expect(freeSlots({ destinationMax: null, destinationRunning: 0, hostMax: null, hostRunning: 0 })).toBe(1);
    expect(freeSlots({ destinationMax: null, destinationRunning: 1, hostMax: 10, hostRunning: 0 })).toBe(0);
  });
  it('never answers below zero when more run than the limit allows (a limit lowered meanwhile)', () => {
    expect(freeSlots({ destinationMax: 1, destinationRunning: 3, hostMax: 1, hostRunning: 3 })).toBe(0);
  });
});

const noJitter = () => 0;
const destination: DestinationRetry = { retryCount: 1, retryFrequency: 30_000, onHostFailure: 0, resetFrequency: 0 };
const host = { retryCount: 2, retryFrequency: 1_000 };

describe('failover after a failed attempt', () => {
  it('sticks to the host for its retry count, each time after its retry frequency', () => {
    const first = afterFailure(initialState(), 2, host, destination, 100, noJitter);
    expect(first).toEqual({
      kind: 'retry',
      reason: 'stick to host',
      state: { hostIndex: 0, hostFailures: 1, rounds: 0, leftPrimaryAt: null },
      retryAt: 1_100,
    });
    const second = afterFailure(first.state, 2, host, destination, 1_100, noJitter);
    expect(second).toMatchObject({ kind: 'retry', reason: 'stick to host', retryAt: 2_100 });
    expect(second.state.hostFailures).toBe(2);
  });

  it('moves to the next host at once when the tries are spent, and remembers when it left the primary', () => {
    const spent: FailoverState = { hostIndex: 0, hostFailures: 2, rounds: 0, leftPrimaryAt: null };
    expect(afterFailure(spent, 3, host, destination, 5_000, noJitter)).toEqual({
      kind: 'retry',
      reason: 'move to next host',
      state: { hostIndex: 1, hostFailures: 0, rounds: 0, leftPrimaryAt: 5_000 },
      retryAt: 5_000,
    });
  });

  it('sleeps the destination retry frequency after a round of every host, then holds when its rounds are spent', () => {
    const lastHostSpent: FailoverState = { hostIndex: 1, hostFailures: 2, rounds: 0, leftPrimaryAt: 10 };
    const round = afterFailure(lastHostSpent, 2, host, destination, 9_000, noJitter);
    expect(round).toEqual({
      kind: 'sleep',
      state: { hostIndex: 0, hostFailures: 0, rounds: 1, leftPrimaryAt: null },
      retryAt: 39_000,
    });
    const again = afterFailure({ ...lastHostSpent, rounds: 1 }, 2, host, destination, 9_000, noJitter);
    expect(again).toEqual({ kind: 'hold', state: { hostIndex: 0, hostFailures: 0, rounds: 0, leftPrimaryAt: null } });
  });

  it('never holds a destination whose retry count is below zero (the reference default)', () => {
    const endless = { ...destination, retryCount: -1 };
    let state: FailoverState = { hostIndex: 0, hostFailures: 2, rounds: 0, leftPrimaryAt: null };
    for (let i = 0; i < 100; i++) {
      const outcome = afterFailure(state, 1, host, endless, 0, noJitter);
      expect(outcome.kind).toBe('sleep');
      state = { ...outcome.state, hostFailures: 2 };
    }
    expect(state.rounds).toBe(100);
  });

  it('holds at the first round with a retry count of 0', () => {
    const once = { ...destination, retryCount: 0 };
    const spent: FailoverState = { hostIndex: 0, hostFailures: 2, rounds: 0, leftPrimaryAt: null };
    expect(afterFailure(spent, 1, host, once, 0, noJitter).kind).toBe('hold');
  });

  it('uses the reference defaults for limits not set', () => {
    const unset = { retryCount: null, retryFrequency: null, onHostFailure: null, resetFrequency: null };
    const outcome = afterFailure(initialState(), 1, { retryCount: null, retryFrequency: null }, unset, 0, noJitter);
    expect(outcome).toMatchObject({ kind: 'retry', retryAt: DEFAULTS.hostRetryFrequency });
    let state = initialState();
    for (let i = 0; i < DEFAULTS.hostRetryCount; i++) {
      state = afterFailure(state, 1, { retryCount: null, retryFrequency: null }, unset, 0, noJitter).state;
    }
    const round = afterFailure(state, 1, { retryCount: null, retryFrequency: null }, unset, 0, noJitter);
    expect(round).toMatchObject({ kind: 'sleep', retryAt: DEFAULTS.destinationRetryFrequency });
  });

  it('adds at most the jitter share to a wait, never less than the wait', () => {
    const low = afterFailure(initialState(), 1, host, destination, 0, () => 0);
    const high = afterFailure(initialState(), 1, host, destination, 0, () => 0.999_999);
    expect(low).toMatchObject({ retryAt: 1_000 });
    expect(high).toMatchObject({ retryAt: Math.round(1_000 * (1 + JITTER * 0.999_999)) });
  });

  it('refuses a destination without hosts', () => {
    expect(() => afterFailure(initialState(), 0, host, destination, 0)).toThrow(RangeError);
  });
});

describe('after a success and before an attempt', () => {
  const onBackup: FailoverState = { hostIndex: 1, hostFailures: 1, rounds: 2, leftPrimaryAt: 1_000 };
  it('stays on the host that worked ("next and stay") and forgets the failures', () => {
    expect(afterSuccess(onBackup, destination)).toEqual({
      hostIndex: 1,
      hostFailures: 0,
      rounds: 0,
      leftPrimaryAt: 1_000,
    });
  });
  it('goes back to the primary with "next and retry"', () => {
    expect(afterSuccess(onBackup, { ...destination, onHostFailure: 1 })).toEqual(initialState());
  });
  it('goes back to the primary once away longer than the reset frequency', () => {
    const resetting = { ...destination, resetFrequency: 60_000 };
    expect(beforeAttempt(onBackup, resetting, 60_999)).toBe(onBackup);
    expect(beforeAttempt(onBackup, resetting, 61_000)).toEqual(initialState());
    expect(beforeAttempt(onBackup, { ...destination, resetFrequency: 0 }, 10_000_000)).toBe(onBackup);
  });
});

describe('the status a started destination shows', () => {
  const now = new Date(10_000);
  const idle: SchedulerView = { sending: false, resending: false, due: false, pausedUntil: null, pauseReason: null };
  it("shows the scheduler's view, as the reference computes it", () => {
    expect(schedulerStatus(idle, now)).toBe('WAIT');
    expect(schedulerStatus({ ...idle, due: true }, now)).toBe('SCHE');
    const retrying = { ...idle, due: true, pausedUntil: new Date(20_000), pauseReason: 'retry' as const };
    expect(schedulerStatus(retrying, now)).toBe('RETR');
    expect(schedulerStatus({ ...retrying, pauseReason: 'sleep' }, now)).toBe('IDLE');
    expect(schedulerStatus({ ...retrying, pausedUntil: now }, now)).toBe('SCHE');
    expect(schedulerStatus({ ...retrying, sending: true }, now)).toBe('EXEC');
    expect(schedulerStatus({ ...idle, sending: true, resending: true }, now)).toBe('DONE');
  });
});

describe('manual changes of a transfer', () => {
  const live = { deleted: false, expired: false };
  it('allows what the reference allows', () => {
    for (const status of ['DONE', 'FAIL', 'STOP', 'HOLD', 'INTR']) {
      expect(manualChangeRefusal({ ...live, status }, 'requeue')).toBeNull();
    }
    for (const status of ['WAIT', 'RETR', 'EXEC', 'DONE', 'FAIL']) {
      expect(manualChangeRefusal({ ...live, status }, 'hold')).toBeNull();
    }
    for (const status of ['WAIT', 'RETR', 'EXEC', 'HOLD', 'FAIL']) {
      expect(manualChangeRefusal({ ...live, status }, 'stop')).toBeNull();
    }
  });
  it('refuses an unchanged status, a requeue of a queued or running transfer, and a stop of a done one', () => {
    expect(manualChangeRefusal({ ...live, status: 'HOLD' }, 'hold')).toBe('Transfer is already HOLD');
    expect(manualChangeRefusal({ ...live, status: 'RETR' }, 'requeue')).toBe('Transfer is already RETR');
    expect(manualChangeRefusal({ ...live, status: 'EXEC' }, 'requeue')).toBe('Transfer in EXEC cannot be requeued');
    expect(manualChangeRefusal({ ...live, status: 'WAIT' }, 'requeue')).toBe('Transfer in WAIT cannot be requeued');
    expect(manualChangeRefusal({ ...live, status: 'DONE' }, 'stop')).toBe('Transfer in DONE cannot be stopped');
  });
  it('only stops a deleted or expired transfer', () => {
    const deleted = { status: 'WAIT', deleted: true, expired: false };
    expect(manualChangeRefusal(deleted, 'requeue')).toBe('Transfer is deleted: it can only be stopped');
    expect(manualChangeRefusal({ ...deleted, deleted: false, expired: true }, 'hold')).toBe(
      'Transfer is expired: it can only be stopped',
    );
    expect(manualChangeRefusal(deleted, 'stop')).toBeNull();
  });
});
