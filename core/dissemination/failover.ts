/**
 * Host failover and retry timing after an attempt, as the reference scheduler does it (its
 * HostProvider): a destination sends through its dissemination hosts in priority order; a failure
 * spends one of the current host's tries and waits the host's retry frequency ("stick to host");
 * with its tries spent it moves on to the next host at once; coming round to the first host again
 * completes a round, after which the destination either waits its own retry frequency (shown as
 * sleeping) or, once its retry count of rounds is spent, goes on HOLD for an operator to restart.
 * Times and frequencies are in milliseconds, as in the backup format.
 */

/** Where a destination stands between attempts (kept per destination by the scheduler). */
export interface FailoverState {
  /** Index into the destination's hosts, in priority order; 0 is the primary. */
  hostIndex: number;
  /** Failed attempts on the current host since the destination came to it. */
  hostFailures: number;
  /** Completed rounds of every host since the last success. */
  rounds: number;
  /** When the destination left its primary host, for `resetFrequency`. */
  leftPrimaryAt: number | null;
}

export interface HostRetry {
  /** Failed attempts a host takes before the next host is tried (reference default 15). */
  retryCount: number | null;
  /** Wait between two attempts on the same host (reference default 15 s). */
  retryFrequency: number | null;
}

export interface DestinationRetry {
  /** Rounds of every host before the destination goes on HOLD; below 0 never (reference default −1). */
  retryCount: number | null;
  /** Wait after a round of every host failed (reference default 30 s). */
  retryFrequency: number | null;
  /** 1: after a success, go back to the primary host ("next and retry"); otherwise stay ("next and stay"). */
  onHostFailure: number | null;
  /** How long the destination may stay away from its primary host before it goes back (default 20 min). */
  resetFrequency: number | null;
}

export const DEFAULTS = {
  hostRetryCount: 15,
  hostRetryFrequency: 15_000,
  destinationRetryCount: -1,
  destinationRetryFrequency: 30_000,
  resetFrequency: 20 * 60_000,
} as const;

/** Retry waits get up to this share added at random, so that movers do not retry in lockstep. */
export const JITTER = 0.1;

export const initialState = (): FailoverState => ({ hostIndex: 0, hostFailures: 0, rounds: 0, leftPrimaryAt: null });

export type FailureOutcome =
  | { kind: 'retry'; state: FailoverState; retryAt: number; reason: 'stick to host' | 'move to next host' }
  | { kind: 'sleep'; state: FailoverState; retryAt: number }
  | { kind: 'hold'; state: FailoverState };

const jittered = (wait: number, random: () => number) => Math.round(wait * (1 + JITTER * random()));

/**
 * What follows a failed attempt on the current host. `hostCount` is the number of dissemination
 * hosts (at least 1); `random` returns a number in [0, 1).
 */
export function afterFailure(
  state: FailoverState,
  hostCount: number,
  host: HostRetry,
  destination: DestinationRetry,
  now: number,
  random: () => number = Math.random,
): FailureOutcome {
  if (hostCount < 1) throw new RangeError('a destination without dissemination hosts cannot fail over');
  const failures = state.hostFailures + 1;
  const hostRetries = host.retryCount ?? DEFAULTS.hostRetryCount;
  if (failures <= hostRetries) {
    const wait = host.retryFrequency ?? DEFAULTS.hostRetryFrequency;
    return {
      kind: 'retry',
      reason: 'stick to host',
      state: { ...state, hostFailures: failures },
      retryAt: now + jittered(wait, random),
    };
  }
  const next = (state.hostIndex + 1) % hostCount;
  const moved: FailoverState = {
    hostIndex: next,
    hostFailures: 0,
    rounds: state.rounds,
    leftPrimaryAt: next === 0 ? null : (state.leftPrimaryAt ?? now),
  };
  if (next !== 0) return { kind: 'retry', reason: 'move to next host', state: moved, retryAt: now };

  const allowedRounds = destination.retryCount ?? DEFAULTS.destinationRetryCount;
  if (allowedRounds >= 0 && state.rounds >= allowedRounds) return { kind: 'hold', state: { ...moved, rounds: 0 } };
  const wait = destination.retryFrequency ?? DEFAULTS.destinationRetryFrequency;
  return { kind: 'sleep', state: { ...moved, rounds: state.rounds + 1 }, retryAt: now + jittered(wait, random) };
}

/** After a success: the host stays in use ("next and stay"), or the primary comes back ("next and retry"). */
export function afterSuccess(state: FailoverState, destination: DestinationRetry): FailoverState {
  const backToPrimary = destination.onHostFailure === 1;
  return {
    hostIndex: backToPrimary ? 0 : state.hostIndex,
    hostFailures: 0,
    rounds: 0,
    leftPrimaryAt: backToPrimary || state.hostIndex === 0 ? null : state.leftPrimaryAt,
  };
}

/** Before an attempt: away from the primary for longer than `resetFrequency`, the destination goes back to it. */
export function beforeAttempt(state: FailoverState, destination: DestinationRetry, now: number): FailoverState {
  if (state.hostIndex === 0 || state.leftPrimaryAt === null) return state;
  const reset = destination.resetFrequency ?? DEFAULTS.resetFrequency;
  if (reset <= 0 || now - state.leftPrimaryAt < reset) return state;
  return initialState();
}
