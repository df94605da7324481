import { describe, expect, it } from 'vitest';
import {
  type ClockReading,
  createDatabaseClock,
  offsetOf,
  selfMeasuringClock,
  trustedReading,
} from '../../core/common/database-clock.ts';

/** The database clock's policy, on clocks the test moves by hand. */
const DB_EPOCH = Date.parse('2031-05-01T00:00:00.000Z');
const TEN_MINUTES = 10 * 60_000;

/** A machine: its monotonic clock, its wall clock (ten minutes ahead of the database's), and a database. */
function machine() {
  const m = { monotonic: 5_000, wallAhead: DB_EPOCH + TEN_MINUTES - 5_000, databaseAhead: DB_EPOCH - 5_000 };
  return {
    m,
    wallNow: () => m.monotonic + m.wallAhead,
    monotonicNow: () => m.monotonic,
    /** Let `ms` pass: both local clocks and the database's move on. */
    pass(ms: number) {
      m.monotonic += ms;
    },
    /** A read of the database's clock whose answer takes `before` ms to be read and `after` ms to come back. */
    read:
      (before = 2, after = 2) =>
      async () => {
        m.monotonic += before;
        const at = new Date(m.monotonic + m.databaseAhead);
        m.monotonic += after;
        return at;
      },
  };
}

describe('the offset from readings', () => {
  it('takes the database to have read its clock halfway through the round trip', () => {
    expect(offsetOf({ sentAt: 100, databaseAt: 10_060, receivedAt: 120 })).toBe(9_950);
  });

  it('trusts the reading with the shortest round trip, and none that went backwards', () => {
    const slow: ClockReading = { sentAt: 0, databaseAt: 1_000, receivedAt: 400 };
    const fast: ClockReading = { sentAt: 500, databaseAt: 1_510, receivedAt: 520 };
    const backwards: ClockReading = { sentAt: 900, databaseAt: 1_000, receivedAt: 899 };
    expect(trustedReading([slow, fast, backwards])).toBe(fast);
    expect(trustedReading([backwards])).toBeNull();
    expect(trustedReading([])).toBeNull();
  });
});

describe('a database clock', () => {
  it("tells the wall clock's time until measured, then the database's", async () => {
    const local = machine();
    const clock = createDatabaseClock(local);
    expect(clock.stale()).toBe(true);
    expect(clock.now().getTime()).toBe(local.wallNow());
    await clock.measure(local.read());
    expect(clock.stale()).toBe(false);
    expect(clock.now().getTime()).toBe(local.m.monotonic + local.m.databaseAhead);
    local.pass(12_345);
    expect(clock.now().getTime()).toBe(local.m.monotonic + local.m.databaseAhead);
  });

  it('keeps the offset of the shortest round trip: a slow answer read late is not trusted', async () => {
    const local = machine();
    const clock = createDatabaseClock({ ...local, readings: 3 });
    const answers = [local.read(900, 100), local.read(1, 1), local.read(50, 450)];
    let i = 0;
    await clock.measure(() => answers[i++]!());
    expect(clock.now().getTime()).toBe(local.m.monotonic + local.m.databaseAhead);
  });

  it('asks for a new measurement once the last is older than the refresh interval', async () => {
    const local = machine();
    const clock = createDatabaseClock({ ...local, refreshMs: 30_000 });
    await clock.measure(local.read());
    local.pass(29_000);
    expect(clock.stale()).toBe(false);
    local.pass(1_000);
    expect(clock.stale()).toBe(true);
  });

  it('is not moved by a step of the wall clock, but asks to be measured again at once', async () => {
    const local = machine();
    const clock = createDatabaseClock(local);
    await clock.measure(local.read());
    local.pass(2_000);
    local.m.wallAhead -= 3_600_000;
    expect(clock.now().getTime()).toBe(local.m.monotonic + local.m.databaseAhead);
    expect(clock.stale()).toBe(true);
    await clock.measure(local.read());
    expect(clock.stale()).toBe(false);
    expect(clock.now().getTime()).toBe(local.m.monotonic + local.m.databaseAhead);
  });

  it('notices a suspended machine (its monotonic clock stopped, the wall clock did not) and catches up', async () => {
    const local = machine();
    const clock = createDatabaseClock(local);
    await clock.measure(local.read());
    local.pass(2_000);
    // Five minutes asleep: the wall clock and the database moved on, the monotonic clock did not.
    local.m.wallAhead += 300_000;
    local.m.databaseAhead += 300_000;
    expect(clock.now().getTime()).toBe(local.m.monotonic + local.m.databaseAhead - 300_000);
    expect(clock.stale()).toBe(true);
    await clock.measure(local.read());
    expect(clock.now().getTime()).toBe(local.m.monotonic + local.m.databaseAhead);
  });

  it('keeps its offset when a measurement fails, and does not try again at every read', async () => {
    const local = machine();
    const clock = createDatabaseClock({ ...local, refreshMs: 30_000, retryMs: 1_000 });
    await clock.measure(local.read());
    const measured = clock.now().getTime() - local.m.monotonic;
    local.pass(30_000);
    await expect(clock.measure(() => Promise.reject(new Error('database unreachable')))).rejects.toThrow();
    expect(clock.now().getTime() - local.m.monotonic).toBe(measured);
    expect(clock.stale()).toBe(false);
    // After a jump it is tried again sooner, though not before the retry interval.
    local.m.wallAhead += 60_000;
    expect(clock.stale()).toBe(false);
    local.pass(1_000);
    expect(clock.stale()).toBe(true);
  });
});

describe("ports' clock over a database clock", () => {
  it('starts one measurement when a read finds it stale, and none while it is fresh', async () => {
    const local = machine();
    const clock = createDatabaseClock(local);
    const started: Array<Promise<void>> = [];
    const read = selfMeasuringClock(clock, () => void started.push(clock.measure(local.read())));
    read();
    read();
    expect(started).toHaveLength(1);
    await Promise.all(started);
    expect(read().getTime()).toBe(local.m.monotonic + local.m.databaseAhead);
    expect(started).toHaveLength(1);
  });
});
