import { createHash } from 'node:crypto';
import { invalid } from '../../core/common/errors.ts';

/**
 * A source read for a method that sends it in one request (S3, HTTP): its bytes hashed and
 * counted as they pass, and held to the registered size. The chunk that reaches the registered
 * size is only passed on once the source is known to end there, so a source that grew never
 * lets the server see a complete body; a short source fails at its end. Either way the request
 * body errors, the fetch is abandoned, and no object or file is written.
 */
export interface SizedSource {
  chunks: AsyncIterable<Uint8Array>;
  bytes(): number;
  md5(): string;
  /** The size error the source raised, if it raised one. */
  failure(): Error | null;
}

export function sizedSource(source: AsyncIterable<Uint8Array>, size: number, knownMd5?: string | null): SizedSource {
  // A stored copy's MD5 was computed when it was retrieved: the bytes are counted, not hashed again.
  const hash = knownMd5 ? null : createHash('md5');
  let bytes = 0;
  let failure: Error | null = null;
  let digest: string | null = knownMd5 || null;
  const fail = (read: string) => {
    failure = invalid(`Source changed size: ${read} bytes read, ${size} registered`);
    return failure;
  };
  async function* chunks() {
    const it = source[Symbol.asyncIterator]();
    let done = false;
    try {
      let next = await it.next();
      while (!next.done) {
        const chunk = next.value;
        if (bytes + chunk.byteLength > size) throw fail(`more than ${size}`);
        hash?.update(chunk);
        bytes += chunk.byteLength;
        // At the registered size: look one step ahead before letting the last bytes go.
        const following = bytes === size ? await it.next() : null;
        if (following && !following.done) throw fail(`more than ${size}`);
        yield chunk;
        next = following ?? (await it.next());
      }
      done = true;
      if (bytes !== size) throw fail(String(bytes));
    } finally {
      if (!done) await it.return?.()?.catch(() => undefined);
    }
  }
  return {
    chunks: chunks(),
    bytes: () => bytes,
    md5: () => (digest ??= (hash as NonNullable<typeof hash>).digest('hex')),
    failure: () => failure,
  };
}

declare const FixedLengthStream: (new (length: number) => TransformStream<Uint8Array, Uint8Array>) | undefined;

/**
 * A request body of a known length from chunks, pulled one at a time (no read-ahead beyond what
 * the connection takes): each pull, the connection having taken what came before, is progress
 * for `upload.moved`. Once `upload.signal` aborted, the body errors and the source is let go:
 * Node's fetch reads the body of a request it aborted to its end otherwise, the whole source with
 * it. On Workers a FixedLengthStream makes fetch send Content-Length rather than chunked encoding;
 * Node's fetch sends the Content-Length header it is given.
 */
export function requestBody(
  chunks: AsyncIterable<Uint8Array>,
  length: number,
  upload?: { signal: AbortSignal; moved: () => void },
): ReadableStream<Uint8Array> {
  const it = chunks[Symbol.asyncIterator]();
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (upload?.signal.aborted) {
          controller.error(upload.signal.reason);
          await it.return?.();
          return;
        }
        upload?.moved();
        const next = await it.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      async cancel() {
        await it.return?.();
      },
    },
    { highWaterMark: 0 },
  );
  return typeof FixedLengthStream === 'function' ? stream.pipeThrough(new FixedLengthStream(length)) : stream;
}

/** What a fetch that threw says: undici hides the reason (refused, reset, TLS) in `cause`. */
export function fetchFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause : null;
  const code = cause && 'code' in cause && typeof cause.code === 'string' ? ` (${cause.code})` : '';
  return cause ? `${cause.message}${code}` : error.message;
}

/** The error a send ends with: the source's size error first, then the abort, then the cause. */
export function sendError(source: SizedSource, signal: AbortSignal, error: unknown, describe: () => Error): unknown {
  if (source.failure()) return source.failure();
  if (signal.aborted) return signal.reason ?? error;
  return describe();
}

/**
 * The caller's signal, aborted as well once `ectrans.putTimeOut` has passed (when the host sets
 * one), with a reason that says so; `clear` must be called when the send ends.
 */
export function withPutTimeout(signal: AbortSignal, timeoutMs: number | null) {
  if (timeoutMs === null) return { signal, clear: () => undefined };
  const timeout = new AbortController();
  const timer = setTimeout(
    () => timeout.abort(new Error(`Transfer timed out after ${timeoutMs / 1000} s (ectrans.putTimeOut)`)),
    timeoutMs,
  );
  return { signal: AbortSignal.any([signal, timeout.signal]), clear: () => clearTimeout(timer) };
}
