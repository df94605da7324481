import { LRUCache } from 'lru-cache';
import { retryAfterSeconds } from '../common/errors.ts';
import type { AuthThrottle } from './ports.ts';

export interface AuthThrottleOptions {
  /** How long a failed authentication counts. */
  windowMs?: number;
  /** Failures of one username within the window before it is refused. */
  maxPerUsername?: number;
  /** Failures from one client address within the window before it is refused. */
  maxPerAddress?: number;
  /** Usernames and addresses remembered at most; the least recently failed go first. */
  maxKeys?: number;
}

// A pipeline with a good secret never fails; one with a stale secret fails once per call and
// is broken anyway. These only bite a caller that keeps guessing.
export const AUTH_THROTTLE_DEFAULTS: Required<AuthThrottleOptions> = {
  windowMs: 5 * 60_000,
  maxPerUsername: 10,
  maxPerAddress: 50,
  maxKeys: 10_000,
};

// When the shell cannot tell the address, every caller would share one bucket, and 50
// failures from anyone would lock everyone out: count such failures by username only.
const UNKNOWN_ADDRESS = 'unknown';

/**
 * Failed authentications in memory, per process (or Workers isolate), over a sliding window.
 * Only failures are recorded; refused attempts are not, so the wait it announces holds.
 */
export function createAuthThrottle(options: AuthThrottleOptions = {}): AuthThrottle {
  const { windowMs, maxPerUsername, maxPerAddress, maxKeys } = { ...AUTH_THROTTLE_DEFAULTS, ...options };
  // Failure times per key, oldest first, at most `limit` of them. The times are kept, not only a
  // count with a lifetime, because the wait announced depends on when each one leaves the window.
  // Beyond maxKeys the least recently failed key goes: only `set` (a failure) makes a key recent.
  const failures = new LRUCache<string, number[]>({ max: maxKeys });

  const keys = (username: string, address: string | undefined): Array<[string, number]> => {
    const out: Array<[string, number]> = [[`user:${username.toLowerCase()}`, maxPerUsername]];
    if (address && address !== UNKNOWN_ADDRESS) out.push([`addr:${address}`, maxPerAddress]);
    return out;
  };

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

  return {
    retryAfter(username, address, now) {
      // The usual case, asked on every authenticated request: no failure is remembered at all.
      if (failures.size === 0) return 0;
      let waitMs = 0;
      for (const [key, limit] of keys(username, address)) {
        const times = recent(key, now);
        // Allowed again once enough of the failures have left the window.
        if (times.length >= limit) waitMs = Math.max(waitMs, times[times.length - limit]! + windowMs - now);
      }
      return waitMs > 0 ? retryAfterSeconds(waitMs) : 0;
    },
    fail(username, address, now) {
      for (const [key, limit] of keys(username, address)) {
        const times = recent(key, now);
        times.push(now);
        if (times.length > limit) times.splice(0, times.length - limit);
        failures.set(key, times);
      }
    },
  };
}
