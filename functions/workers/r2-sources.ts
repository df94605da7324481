import { invalid, messageOf } from '../../core/common/errors.ts';
import type { SourceProber } from '../../core/data-files/ports.ts';
import { parseR2Source, shownR2Source } from '../../core/data-files/r2-sources.ts';
import type { SourceRange, SourceReader } from '../../core/dissemination/send.ts';

/** What the sources use of an R2 bucket binding (a Worker's `env.<binding>`). */
export interface R2SourceBucket {
  head(key: string): Promise<{ size: number } | null>;
  get(
    key: string,
    options?: { range?: { offset: number; length: number } },
  ): Promise<{ size: number; body: ReadableStream<Uint8Array> } | null>;
}

/** The bucket bound under a name, when that binding is an R2 bucket. */
export type SourceBuckets = (binding: string) => R2SourceBucket | null;

/** The R2 buckets among the Worker's bindings. */
export const sourceBucketsOf =
  (env: object): SourceBuckets =>
  (binding) => {
    const bound = (env as Record<string, unknown>)[binding] as Partial<R2SourceBucket> | undefined;
    return bound && typeof bound.head === 'function' && typeof bound.get === 'function'
      ? (bound as R2SourceBucket)
      : null;
  };

/** The allowed bucket and key of an R2 source, or the reason it cannot be read. */
function locate(raw: string, allowed: readonly string[], buckets: SourceBuckets) {
  const { binding, key } = parseR2Source(raw, allowed);
  const bucket = buckets(binding);
  const shown = shownR2Source(raw);
  if (!bucket) throw invalid(`Source ${shown} not reachable: ${binding} is not an R2 bucket bound to this Worker`);
  return { bucket, key, shown };
}

/** Probes an R2 source at registration: its size from the object's metadata (a head, no body). */
export function r2SourceProber(allowed: readonly string[], buckets: SourceBuckets): SourceProber {
  return {
    async probe(raw) {
      const { bucket, key, shown } = locate(raw, allowed, buckets);
      const object = await bucket.head(key).catch((e: unknown) => {
        throw invalid(`Source ${shown} not reachable: ${messageOf(e)}`);
      });
      if (!object) throw invalid(`Source ${shown} not reachable: no such object`);
      return { size: object.size };
    },
  };
}

/**
 * Reads an R2 source when it is sent: the object's body streamed, its size the whole object's (for
 * the caller to compare with the registered one). A range reads only its bytes; a range R2 refuses
 * (the object shrank below it since registration) is answered with the object's size now and no
 * bytes, so that the caller sees the change. Aborting the signal cancels the body.
 */
export function r2SourceReader(allowed: readonly string[], buckets: SourceBuckets): SourceReader {
  return {
    async open(raw, signal, range) {
      signal.throwIfAborted();
      const { bucket, key, shown } = locate(raw, allowed, buckets);
      const unreadable = (why: string) => invalid(`Source ${shown} could not be read: ${why}`);
      let object: Awaited<ReturnType<R2SourceBucket['get']>>;
      try {
        object = await bucket.get(key, range && { range: r2Range(range) });
      } catch (e) {
        const now = range ? await bucket.head(key).catch(() => null) : null;
        if (now && range && range.start >= now.size) return { size: now.size, stream: noBytes() };
        throw unreadable(messageOf(e));
      }
      if (!object) throw unreadable('no such object');
      return { size: object.size, stream: chunksOf(object.body, signal) };
    },
  };
}

const r2Range = (range: SourceRange) => ({ offset: range.start, length: range.end - range.start + 1 });

async function* noBytes(): AsyncIterable<Uint8Array> {}

/** The body's chunks; cancelled once the signal aborts, or once its reader leaves before the end. */
export function chunksOf(body: ReadableStream<Uint8Array>, signal: AbortSignal): AsyncIterable<Uint8Array> {
  const reader = body.getReader();
  const cancel = () => void reader.cancel(signal.reason).catch(() => undefined);
  signal.addEventListener('abort', cancel, { once: true });
  return (async function* () {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        signal.throwIfAborted();
        if (done) return;
        yield value;
      }
    } finally {
      signal.removeEventListener('abort', cancel);
      cancel();
    }
  })();
}
