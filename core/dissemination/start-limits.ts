/**
 * The reference's start and requeue limits (its scheduler, before a transfer is started): a transfer
 * started `maxStart` times since its last requeue is not started again but requeued, its starts
 * counted from 0 again, and delayed by `startFrequency`; once requeued `maxRequeue` times it fails.
 * Times and frequencies are in milliseconds, as in the backup format.
 */

/** A destination's limits as stored; null is the reference's default. */
export interface StartLimits {
  /** Starts before a requeue; 0 or below: no limit (default 2). */
  maxStart: number | null;
  /** How long a requeued transfer waits before its next start (default 10 min). */
  startFrequency: number | null;
  /** Requeues before the transfer fails; 0 or below: no limit (default −1). */
  maxRequeue: number | null;
}

export const START_LIMIT_DEFAULTS = { maxStart: 2, startFrequency: 10 * 60_000, maxRequeue: -1 } as const;

/** The counters of a due transfer that the limits are judged on. */
export interface StartCounts {
  startCount: number;
  requeueCount: number;
}

export type StartLimitDecision =
  | { status: 'FAIL'; requeueCount: number; comment: string }
  | { status: 'RETR'; requeueCount: number; queueAt: Date; comment: string };

/** The start count from which a due transfer is requeued rather than started; null: never. */
export function startLimit(limits: StartLimits): number | null {
  const maxStart = limits.maxStart ?? START_LIMIT_DEFAULTS.maxStart;
  return maxStart > 0 ? maxStart : null;
}

/**
 * What becomes of a due transfer about to be started: null when it may start; otherwise its starts
 * go back to 0 and its requeues up by one, and it fails once they reach `maxRequeue`, else it is
 * requeued (RETR) until `now + startFrequency`. The comments are the reference's.
 */
export function decideStartLimit(counts: StartCounts, limits: StartLimits, now: Date): StartLimitDecision | null {
  const limit = startLimit(limits);
  if (limit === null || counts.startCount < limit) return null;
  const requeueCount = counts.requeueCount + 1;
  const maxRequeue = limits.maxRequeue ?? START_LIMIT_DEFAULTS.maxRequeue;
  if (maxRequeue > 0 && requeueCount >= maxRequeue) {
    return {
      status: 'FAIL',
      requeueCount,
      comment: `Maximum requeue limit reached (stopped after ${maxRequeue} attempt(s))`,
    };
  }
  const queueAt = new Date(now.getTime() + (limits.startFrequency ?? START_LIMIT_DEFAULTS.startFrequency));
  return {
    status: 'RETR',
    requeueCount,
    queueAt,
    comment: `Maximum start limit reached (delayed until ${shortTime(queueAt)})`,
  };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => String(n).padStart(2, '0');

/** The reference's `MMM dd HH:mm:ss` (e.g. `Nov 28 15:07:27`), in UTC as every time the service writes. */
export function shortTime(at: Date): string {
  const clock = `${two(at.getUTCHours())}:${two(at.getUTCMinutes())}:${two(at.getUTCSeconds())}`;
  return `${MONTHS[at.getUTCMonth()]} ${two(at.getUTCDate())} ${clock}`;
}
