import { LRUCache } from 'lru-cache';

/** A bounded map whose entries expire `ttlMs` after they were set, by the clock of the caller. */
export interface ExpiringCache<V> {
  get(key: string, now: number): V | undefined;
  set(key: string, value: V, now: number): void;
  delete(key: string): void;
}

/**
 * lru-cache with the time handed in by each call instead of read from `performance.now()`: the
 * ports take `now` from Ports.clock, which tests move forward instead of waiting.
 * Beyond `max` entries the least recently used go first.
 */
export function expiringCache<V extends {}>(max: number, ttlMs: number): ExpiringCache<V> {
  let current = 0;
  const cache = new LRUCache<string, V>({
    max,
    // lru-cache keeps an entry while its age is at most `ttl`; here it is gone once the age
    // reaches `ttlMs`, as before. Times are whole milliseconds (Date.getTime()).
    ttl: ttlMs - 1,
    // No cached reading of the clock and no timer: a timer would also outlive a Workers request.
    ttlResolution: 0,
    // Shifted by one: lru-cache reads a start time of 0 as "never expires", and a clock handed in
    // by a test may well start at 0. Ages, the only thing compared, are unchanged.
    perf: { now: () => current + 1 },
  });
  return {
    get(key, now) {
      current = now;
      // A stale entry is deleted on the way.
      return cache.get(key);
    },
    set(key, value, now) {
      current = now;
      cache.set(key, value);
    },
    delete: (key) => void cache.delete(key),
  };
}
