import { LRUCache } from 'lru-cache';
import type { FailureLog } from './ports.ts';

const NONE: readonly number[] = Object.freeze([]);

/**
 * Failed authentications in this process's memory (per isolate on Workers). Beyond `maxKeys` the
 * least recently failed key goes: only a failure makes a key recent, never asking about it.
 */
export function memoryFailureLog(maxKeys = 10_000): FailureLog {
  const failures = new LRUCache<string, number[]>({ max: maxKeys });
  return {
    async recent(key, since, keep) {
      // The usual case, asked on every authenticated request: no failure is remembered at all.
      if (failures.size === 0) return NONE;
      const times = failures.peek(key);
      if (!times) return NONE;
      const first = times.findIndex((t) => t > since);
      if (first === -1) {
        failures.delete(key);
        return NONE;
      }
      if (first > 0) times.splice(0, first);
      return times.length > keep ? times.slice(-keep) : times;
    },
    async add(key, at, since, keep) {
      const times = (failures.peek(key) ?? []).filter((t) => t > since);
      times.push(at);
      if (times.length > keep) times.splice(0, times.length - keep);
      failures.set(key, times);
    },
  };
}
