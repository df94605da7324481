import type { JsonText } from './json-text.ts';
import type { ViewCache } from '../ports.ts';

// Rendered lists are large (10,000 destinations are 2.3 million bytes): bound the total size.
const MAX_BYTES = 8_000_000;

/** Rendered lists of one process (isolate on Workers), the oldest dropped first when full. */
export function createViewCache(maxBytes = MAX_BYTES): ViewCache {
  const entries = new Map<string, { version: number; view: JsonText }>();
  let bytes = 0;
  return {
    get: (key) => entries.get(key),
    set(key, entry) {
      const old = entries.get(key);
      if (old) {
        bytes -= old.view.size;
        entries.delete(key);
      }
      if (entry.view.size > maxBytes) return;
      for (const [oldest, value] of entries) {
        if (bytes + entry.view.size <= maxBytes) break;
        bytes -= value.view.size;
        entries.delete(oldest);
      }
      entries.set(key, entry);
      bytes += entry.view.size;
    },
  };
}
