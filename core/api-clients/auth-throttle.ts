import { LRUCache } from 'lru-cache';
import { retryAfterSeconds } from '../common/errors.ts';
import type { AuthThrottle, AuthThrottleWait } from './ports.ts';

export interface AuthThrottleOptions {
  /** How long a failed authentication counts. */
  windowMs?: number;
  /** Failures of one username within the window, from anywhere, before it is refused. */
  maxPerUsername?: number;
  /** Failures of one username from one client address within the window before that pair is refused. */
  maxPerUsernameAddress?: number;
  /** Failures from one client address within the window before its wrong credentials get 429. */
  maxPerAddress?: number;
  /** Keys remembered at most; the least recently failed go first. */
  maxKeys?: number;
}

// A pipeline with a good secret never fails; one with a stale secret fails once per call and
// is broken anyway. These only bite a caller that keeps guessing. The pair limit is below the
// username's: one host with a stale secret is stopped before its failures could refuse the
// same username on every other host.
export const AUTH_THROTTLE_DEFAULTS: Required<AuthThrottleOptions> = {
  windowMs: 5 * 60_000,
  maxPerUsername: 10,
  maxPerUsernameAddress: 5,
  maxPerAddress: 50,
  maxKeys: 10_000,
};

// When the shell cannot tell the address, every caller would share one bucket, and 50
// failures from anyone would lock everyone out: count such failures by username only.
const UNKNOWN_ADDRESS = 'unknown';

const NO_WAIT: AuthThrottleWait = Object.freeze({ username: 0, address: 0 });

/**
 * Failed authentications in memory, per process (or Workers isolate), over a sliding window.
 *
 * Every failure counts for its username, for its username at its address, and for its address,
 * whether the username exists or not: counting unknown usernames differently would tell a
 * caller which ones exist. The address only holds back wrong credentials (the caller decides,
 * once it has checked them), so clients behind one NAT or pipeline host keep working while
 * another of them fails.
 */
export function createAuthThrottle(options: AuthThrottleOptions = {}): AuthThrottle {
  const { windowMs, maxPerUsername, maxPerUsernameAddress, maxPerAddress, maxKeys } = {
    ...AUTH_THROTTLE_DEFAULTS,
    ...options,
  };
  // Failure times per key, oldest first, at most `limit` of them. The times are kept, not only a
  // count with a lifetime, because the wait announced depends on when each one leaves the window.
  // Beyond maxKeys the least recently failed key goes: only `set` (a failure) makes a key recent.
  const failures = new LRUCache<string, number[]>({ max: maxKeys });

  const known = (address: string | undefined): address is string => !!address && address !== UNKNOWN_ADDRESS;
  const userKey = (username: string) => `user:${username.toLowerCase()}`;
  // Length-prefixed: neither an address nor a username can then end where the other begins.
  const pairKey = (username: string, address: string) => `pair:${address.length}:${address}:${username.toLowerCase()}`;
  const addressKey = (address: string) => `addr:${address}`;

  const recent = (key: string, now: number): number[] => {
    // peek: asking whether a key may try does not make it recent.
    const times = failures.peek(key);
    if (!times) return [];
    const expired = times.findIndex((t) => t > now - windowMs);
    if (expired === -1) {
      failures.delete(key);
      return [];
    }
    if (expired > 0) times.splice(0, expired);
    return times;
  };

  /** Milliseconds until the key is allowed again: once enough of its failures have left the window. */
  const waitOf = (key: string, limit: number, now: number) => {
    const times = recent(key, now);
    return times.length >= limit ? times[times.length - limit]! + windowMs - now : 0;
  };

  const record = (key: string, limit: number, now: number) => {
    const times = recent(key, now);
    // A key at its limit is already refused: one more failure (a wrong secret checked while only
    // its address was held back, or a race) would push out the wait it was told. It is still
    // made recent, as a key that keeps failing.
    if (times.length < limit) times.push(now);
    failures.set(key, times);
  };

  const seconds = (waitMs: number) => (waitMs > 0 ? retryAfterSeconds(waitMs) : 0);

  return {
    retryAfter(username, address, now) {
      // The usual case, asked on every authenticated request: no failure is remembered at all.
      if (failures.size === 0) return NO_WAIT;
      let own = waitOf(userKey(username), maxPerUsername, now);
      let fromAddress = 0;
      if (known(address)) {
        own = Math.max(own, waitOf(pairKey(username, address), maxPerUsernameAddress, now));
        fromAddress = waitOf(addressKey(address), maxPerAddress, now);
      }
      return own === 0 && fromAddress === 0 ? NO_WAIT : { username: seconds(own), address: seconds(fromAddress) };
    },
    fail(username, address, now) {
      record(userKey(username), maxPerUsername, now);
      if (!known(address)) return;
      record(pairKey(username, address), maxPerUsernameAddress, now);
      record(addressKey(address), maxPerAddress, now);
    },
  };
}
