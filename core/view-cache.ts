import type { JsonText } from './json-text.ts';
import type { ViewCache } from './ports.ts';

// Rendered lists are large (10,000 destinations are 2.3 million characters): bound the total.
const MAX_CHARACTERS = 8_000_000;

/** Rendered lists of one process (isolate on Workers), the oldest dropped first when full. */
export function createViewCache(maxCharacters = MAX_CHARACTERS): ViewCache {
  const entries = new Map<string, { version: number; view: JsonText }>();
  let characters = 0;
  return {
    get: (key) => entries.get(key),
    set(key, entry) {
      const old = entries.get(key);
      if (old) {
        characters -= old.view.text.length;
        entries.delete(key);
      }
      if (entry.view.text.length > maxCharacters) return;
      for (const [oldest, value] of entries) {
        if (characters + entry.view.text.length <= maxCharacters) break;
        characters -= value.view.text.length;
        entries.delete(oldest);
      }
      entries.set(key, entry);
      characters += entry.view.text.length;
    },
  };
}
