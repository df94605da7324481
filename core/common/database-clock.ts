/**
 * Leases and due times are compared across processes: a lease one mover writes is judged lapsed by
 * another, a queue time a server writes is judged due by a mover. Each process's own clock would
 * make those judgements disagree (a mover ten minutes ahead takes live attempts away and sends
 * transfers before they are due), so every process reads the database's clock instead: its own
 * monotonic clock plus an offset measured against the database.
 *
 * The monotonic clock, not the wall clock, carries the time between measurements, so that the wall
 * clock being set (by hand, by NTP stepping it) moves nothing. The one thing the monotonic clock
 * misses is a suspended machine: the two clocks then disagree, and that disagreement, like the age
 * of the last measurement, asks for a new one.
 */

/** One reading of the database's clock (ms since the epoch), between two of the local monotonic clock (ms). */
export interface ClockReading {
  sentAt: number;
  databaseAt: number;
  receivedAt: number;
}

export const roundTripOf = (reading: ClockReading) => reading.receivedAt - reading.sentAt;

/**
 * The database's time when the local monotonic clock read 0: the database read its clock, at best
 * guess, halfway through the round trip.
 */
export const offsetOf = (reading: ClockReading) => reading.databaseAt - (reading.sentAt + reading.receivedAt) / 2;

/**
 * The reading to trust: the one with the shortest round trip, which leaves the database the least
 * room for where in it it read its clock (the error is at most half the round trip).
 */
export function trustedReading(readings: readonly ClockReading[]): ClockReading | null {
  let best: ClockReading | null = null;
  for (const reading of readings) {
    if (roundTripOf(reading) < 0) continue;
    if (best === null || roundTripOf(reading) < roundTripOf(best)) best = reading;
  }
  return best;
}

export interface DatabaseClockOptions {
  /** The local wall clock (ms since the epoch): only compared with the monotonic one, to notice a jump. */
  wallNow?: () => number;
  /** A clock that only moves forward, at the pace of real time (ms, any origin). */
  monotonicNow?: () => number;
  /** How long a measurement is trusted. */
  refreshMs?: number;
  /** How far the wall clock may move against the monotonic one before a new measurement is asked for. */
  jumpMs?: number;
  /** After a jump, how long since the last attempt before another (a failing database is not asked at every read). */
  retryMs?: number;
  /** Readings per measurement (one is trusted). */
  readings?: number;
}

export interface DatabaseClock {
  /** The database's time now, as last measured; the local wall clock's until a first measurement. */
  now(): Date;
  /** Whether a measurement is due: none yet, the last one too old, or the wall clock jumped since. */
  stale(): boolean;
  /**
   * Reads the database's clock a few times with `read` and keeps the offset of the shortest round
   * trip. It counts as started at once (stale() turns false): concurrent callers do not pile up.
   */
  measure(read: () => Promise<Date>): Promise<void>;
}

export const CLOCK_REFRESH_MS = 30_000;
const JUMP_MS = 1000;
const RETRY_MS = 1000;
const READINGS = 3;

export function createDatabaseClock(options: DatabaseClockOptions = {}): DatabaseClock {
  const wallNow = options.wallNow ?? Date.now;
  const monotonicNow = options.monotonicNow ?? (() => performance.now());
  const refreshMs = options.refreshMs ?? CLOCK_REFRESH_MS;
  const jumpMs = options.jumpMs ?? JUMP_MS;
  const retryMs = options.retryMs ?? RETRY_MS;
  const readings = options.readings ?? READINGS;

  const wallAhead = () => wallNow() - monotonicNow();
  // Until it is measured, the database's time is taken to be the wall clock's.
  let offset = wallAhead();
  // How far the wall clock was ahead of the monotonic one when the offset was last measured.
  let wallAheadWhenMeasured = offset;
  let lastAttemptAt = Number.NEGATIVE_INFINITY;

  const jumped = () => Math.abs(wallAhead() - wallAheadWhenMeasured) > jumpMs;

  return {
    now: () => new Date(Math.round(monotonicNow() + offset)),
    stale() {
      const since = monotonicNow() - lastAttemptAt;
      return since >= refreshMs || (since >= retryMs && jumped());
    },
    async measure(read) {
      lastAttemptAt = monotonicNow();
      const taken: ClockReading[] = [];
      for (let i = 0; i < readings; i++) {
        const sentAt = monotonicNow();
        const databaseAt = (await read()).getTime();
        taken.push({ sentAt, databaseAt, receivedAt: monotonicNow() });
      }
      const trusted = trustedReading(taken);
      if (!trusted) return;
      offset = offsetOf(trusted);
      wallAheadWhenMeasured = wallAhead();
    },
  };
}

/**
 * Ports' clock over a database clock: each read that finds the measurement due starts a new one
 * through `remeasure` (in the background: the read itself never waits for the database).
 */
export function selfMeasuringClock(clock: DatabaseClock, remeasure: () => void): () => Date {
  return () => {
    if (clock.stale()) remeasure();
    return clock.now();
  };
}
