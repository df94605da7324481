import { invalid, messageOf } from '../../core/common/errors.ts';
import type { Delivered } from '../../core/dissemination/deliver.ts';
import { joinRemote } from '../../core/dissemination/deliver.ts';
import type { TransferMethod } from '../../core/dissemination/methods.ts';
import { requestBody, sendError, sizedSource, withPutTimeout } from './sized-source.ts';

/** What the method uses of an R2 bucket binding (a Worker's `env.<binding>`). */
export interface R2BucketLike {
  put(key: string, value: ReadableStream<Uint8Array>): Promise<{ etag: string; size: number } | null>;
  delete(key: string): Promise<void>;
}

/**
 * The `r2` method: the file as one object of an R2 bucket bound to the Worker, named by the
 * host's `r2.binding`, under the key `<dir>/<target>`. The body streams with its length known
 * (a FixedLengthStream, which R2 requires of a stream) and its MD5 computed as it passes; a put
 * is atomic, so there is no temporary name, and a body that fails half-way leaves no object.
 * The object's ETag (the MD5 of a single put) must match the bytes sent.
 */
export function r2Method(bucketNamed: (binding: string) => R2BucketLike | null): TransferMethod {
  return {
    async send(host, file, source, callerSignal) {
      callerSignal.throwIfAborted();
      const binding = host.options.raw.get('binding')?.trim() ?? '';
      if (binding === '') throw invalid('r2.binding is not set: it names the R2 bucket binding of the Worker');
      const bucket = bucketNamed(binding);
      if (!bucket) throw invalid(`R2 binding ${binding} is not bound to this Worker`);
      const key = joinRemote(host.directory, file.target).replace(/^\/+/, '');
      const { signal, clear } = withPutTimeout(callerSignal, host.options.putTimeoutMs);
      const sized = sizedSource(untilAborted(source, signal), file.size, file.md5);
      const label = `R2 put ${binding}/${key}`;
      try {
        let stored: { etag: string } | null;
        try {
          stored = await bucket.put(key, requestBody(sized.chunks, file.size));
        } catch (error) {
          throw sendError(sized, signal, error, () => new Error(`${label} failed: ${messageOf(error)}`));
        }
        if (sized.bytes() !== file.size) throw sized.failure() ?? invalid('Source changed size');
        const md5 = sized.md5();
        if (stored && stored.etag.replace(/"/g, '').toLowerCase() !== md5) {
          // Nothing that differs from the source may keep the final name.
          await bucket.delete(key).catch(() => undefined);
          throw new Error(`${label} failed: ETag ${stored.etag} is not the MD5 ${md5} of the bytes sent`);
        }
        return { sent: sized.bytes(), md5 } satisfies Delivered;
      } finally {
        clear();
      }
    },
    async close() {},
  };
}

/** The chunks, ending with the signal's reason once it aborts (a bucket put takes no signal). */
async function* untilAborted(chunks: AsyncIterable<Uint8Array>, signal: AbortSignal) {
  for await (const chunk of chunks) {
    signal.throwIfAborted();
    yield chunk;
  }
  signal.throwIfAborted();
}
