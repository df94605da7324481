import type { Memo } from '../ports.ts';

/**
 * A Memo for one process (one isolate on Workers). Only loaded values are kept, never a
 * pending promise: on Workers a promise must not outlive the request whose I/O settles it.
 */
export function createMemo(): Memo {
  const values = new Map<string, unknown>();
  return {
    async get<T>(key: string, load: () => Promise<T>): Promise<T> {
      if (values.has(key)) return values.get(key) as T;
      const value = await load();
      values.set(key, value);
      return value;
    },
  };
}
