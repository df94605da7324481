import { LRUCache } from 'lru-cache';
import type { SerializedAnswer } from '../common/operation.ts';
import type { ViewCache } from './ports.ts';

// Rendered lists are large (10,000 destinations are 2.3 million bytes): bound the total size.
const MAX_BYTES = 8_000_000;

type Entry = { version: number; answer: SerializedAnswer };

/**
 * Rendered lists of one process (isolate on Workers), bounded by their total size: the least
 * recently used go first, and one larger than the whole bound is not kept at all.
 */
export function createViewCache(maxBytes = MAX_BYTES): ViewCache {
  const entries = new LRUCache<string, Entry>({
    maxSize: maxBytes,
    // lru-cache wants a positive size; an empty answer still takes an entry.
    sizeCalculation: (entry) => Math.max(1, entry.answer.body.byteLength),
  });
  return {
    get: (key) => entries.get(key),
    set: (key, entry) => void entries.set(key, entry),
  };
}
