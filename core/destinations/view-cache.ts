import type { SerializedAnswer } from '../common/operation.ts';
import type { ViewCache } from './ports.ts';

// Rendered lists are large (10,000 destinations are 2.3 million bytes): bound the total size.
const MAX_BYTES = 8_000_000;

/** Rendered lists of one process (isolate on Workers), the oldest dropped first when full. */
export function createViewCache(maxBytes = MAX_BYTES): ViewCache {
  const entries = new Map<string, { version: number; answer: SerializedAnswer }>();
  let bytes = 0;
  return {
    get: (key) => entries.get(key),
    set(key, entry) {
      const old = entries.get(key);
      if (old) {
        bytes -= old.answer.body.byteLength;
        entries.delete(key);
      }
      if (entry.answer.body.byteLength > maxBytes) return;
      for (const [oldest, value] of entries) {
        if (bytes + entry.answer.body.byteLength <= maxBytes) break;
        bytes -= value.answer.body.byteLength;
        entries.delete(oldest);
      }
      entries.set(key, entry);
      bytes += entry.answer.body.byteLength;
    },
  };
}
