import { retryAfterSeconds, throttled } from '../common/errors.ts';
import type { FailedAuthLimits, FailureLog } from './ports.ts';

/** The failed-authentication rules of the API and the console's sign-in (wire decisions §2). */
export interface FailedAuthRules {
  /** How long a failed authentication counts. */
  windowMs: number;
  /** Failures of one username from one address before that pair alone is refused, right secret or not. */
  refusePairAt: number;
  /** Failures from one address, whatever the usernames, before its wrong credentials get 429. */
  holdBackAddressAt: number;
  /** Failures of one username from anywhere before its wrong answers are slowed. */
  slowUsernameAfter: number;
  /** What each failure beyond that adds to the delay of the username's wrong answers, up to maxDelayMs. */
  delayStepMs: number;
  maxDelayMs: number;
}

// The reference bans an address after 20 failed logins for 300 s. A pipeline with a stale secret
// reaches the pair limit on its own host only; many hosts guessing one username are slowed from
// the point where one host would have been refused, at most by the most a client waits anyway.
export const FAILED_AUTH_RULES: FailedAuthRules = Object.freeze({
  windowMs: 5 * 60_000,
  refusePairAt: 20,
  holdBackAddressAt: 50,
  slowUsernameAfter: 20,
  delayStepMs: 100,
  maxDelayMs: 2000,
});

// When the shell cannot tell the address, every caller would share one pair and one address:
// anyone could then refuse a username everywhere. Such failures only slow the username.
const UNKNOWN_ADDRESS = 'unknown';

function keysOf(username: string, address: string | undefined) {
  const user = username.toLowerCase();
  if (!address || address === UNKNOWN_ADDRESS) return { username: `user:${user}`, pair: null, address: null };
  return {
    username: `user:${user}`,
    // Length-prefixed: neither an address nor a username can then end where the other begins.
    pair: `pair:${address.length}:${address}:${user}`,
    address: `addr:${address}`,
  };
}

/** Milliseconds until fewer than `limit` of these failures (oldest first) are left in the window. */
function waitMs(times: readonly number[], limit: number, now: number, windowMs: number) {
  return times.length >= limit ? times[times.length - limit]! + windowMs - now : 0;
}

/** How long a wrong answer for a username with this many failures in the window waits. */
export function delayOfWrongAnswer(rules: FailedAuthRules, usernameFailures: number) {
  const beyond = usernameFailures - rules.slowUsernameAfter;
  return beyond > 0 ? Math.min(rules.maxDelayMs, beyond * rules.delayStepMs) : 0;
}

export interface Attempt {
  username: string;
  /** The caller's address as the shell sees it; undefined or `unknown` when it cannot tell. */
  address: string | undefined;
  now: number;
  /** The text of the 429. */
  tooMany: string;
}

/**
 * Checks credentials under the failed-authentication rules, the one place they are applied:
 * - a (username, address) pair with `refusePairAt` failures in the window is refused (429 with
 *   the seconds until enough of them have left it) before `check` runs, right secret or not;
 * - otherwise a right secret is answered at once, whatever other addresses or usernames did;
 * - a wrong one counts for its username, its pair and its address, known username or not (counting
 *   only some would tell which exist); it gets 429 when its address already has
 *   `holdBackAddressAt` failures, else it waits as long as its username's failures say.
 *
 * `check` answers what the right credentials give, or null when they are wrong; a wrong answer is
 * null too, for the caller to turn into its own error.
 */
export async function checkLimited<T>(
  limits: FailedAuthLimits,
  log: FailureLog,
  attempt: Attempt,
  check: () => Promise<T | null>,
): Promise<T | null> {
  const { rules } = limits;
  const { now, tooMany } = attempt;
  const since = now - rules.windowMs;
  const keys = keysOf(attempt.username, attempt.address);
  const refusedFor = (ms: number) => throttled(tooMany, retryAfterSeconds(ms));

  if (keys.pair) {
    const wait = waitMs(
      await log.recent(keys.pair, since, rules.refusePairAt),
      rules.refusePairAt,
      now,
      rules.windowMs,
    );
    if (wait > 0) throw refusedFor(wait);
  }
  const granted = await check();
  if (granted !== null) return granted;

  const slowestAt = rules.slowUsernameAfter + Math.ceil(rules.maxDelayMs / Math.max(1, rules.delayStepMs));
  const ofUsername = await log.recent(keys.username, since, slowestAt);
  await log.add(keys.username, now, since, slowestAt);
  if (keys.pair) await log.add(keys.pair, now, since, rules.refusePairAt);
  if (keys.address) {
    const ofAddress = await log.recent(keys.address, since, rules.holdBackAddressAt);
    const wait = waitMs(ofAddress, rules.holdBackAddressAt, now, rules.windowMs);
    // An address already refused is not counted again: that would push out the wait it was told.
    if (wait > 0) throw refusedFor(wait);
    await log.add(keys.address, now, since, rules.holdBackAddressAt);
  }
  const delay = delayOfWrongAnswer(rules, ofUsername.length + 1);
  if (delay > 0) await limits.sleep(delay);
  return null;
}
