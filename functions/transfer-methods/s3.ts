import { createHash } from 'node:crypto';
import type { ListedEntry } from '../../core/acquisition/selection.ts';
import { invalid } from '../../core/common/errors.ts';
import type { Delivered } from '../../core/dissemination/deliver.ts';
import type { FetchedFile, HostConnection, OutgoingFile, TransferMethod } from '../../core/dissemination/methods.ts';
import { progressWatch } from '../../core/dissemination/progress-watch.ts';
import { partSizeFor, type S3Object, type S3Settings, s3Listing, s3Object, s3Settings } from './s3-target.ts';
import {
  completeXml,
  listedObjects,
  plainEtag,
  queryOf,
  s3Reason,
  sha256,
  signedS3Request,
  uniqueEntries,
  xmlValue,
} from './s3-wire.ts';
import { fetchFailure, requestBody, type SizedSource, sendError, sizedSource } from './sized-source.ts';
import { answerText, uploadWatch } from './upload-watch.ts';

export interface S3Dependencies {
  /** The fetch to send with; tests give one that reaches virtual-hosted names without DNS. */
  fetch?: typeof fetch;
  /** The most keys a ListObjectsV2 page holds (max-keys); the server's default (S3's: 1000) when none. */
  listPageSize?: number;
}

/** How long aborting a multipart upload may take once the send itself has failed. */
const CLEANUP_MS = 30_000;

/**
 * The `s3` method: one PUT, or a multipart upload for big files, signed with SigV4 over fetch
 * (the same code on Node and Workers). Payloads go unsigned (`UNSIGNED-PAYLOAD`) so a body is
 * streamed rather than hashed first; integrity comes from the MD5 checked against the ETag (and
 * Content-MD5 on parts). A PUT and a completed multipart upload are atomic, so there is no
 * temporary name: a failed send leaves no object, and a failed multipart upload is aborted.
 * Requests the server stops reading, or does not answer, for `ectrans.streamTimeout` are aborted,
 * their connections closed (see uploadWatch).
 */
export function s3Method(dependencies: S3Dependencies = {}): TransferMethod {
  // Called unbound: Workers refuses a fetch invoked as a method of another object.
  const send: typeof fetch = dependencies.fetch ?? ((input, init) => fetch(input, init));
  return {
    async send(host, file, source, callerSignal) {
      callerSignal.throwIfAborted();
      const settings = s3Settings(host.options.raw);
      const watch = uploadWatch(callerSignal, host.options);
      const client = new S3Client(host, s3Object(host, file, settings), settings, send, watch.moved);
      const sized = sizedSource(source, file.size, file.md5);
      try {
        return file.size > 0 && file.size >= settings.multipartSize
          ? await client.multipart(file, sized, watch.signal)
          : await client.put(file, sized, watch.signal);
      } catch (error) {
        // A request still under way ends here, its connection dropped, before the send does.
        watch.abort(error);
        throw error;
      } finally {
        watch.clear();
      }
    },
    async fetch(host, path, signal) {
      // The object a send of `path` from the bucket's root would write: s3.bucketName, or the first directory.
      const settings = s3Settings(host.options.raw);
      const object = s3Object({ ...host, directory: '' }, { target: path, size: 0 }, settings);
      return new S3Client(host, object, settings, send, () => undefined).get(signal);
    },
    async list(host, directory, signal) {
      signal.throwIfAborted();
      const settings = s3Settings(host.options.raw);
      const where = s3Listing(host, directory, settings);
      // No ectrans.putTimeOut: a listing puts nothing. A server that stops answering still ends it.
      const watch = progressWatch(signal, { putTimeoutMs: null, streamTimeoutMs: host.options.streamTimeoutMs });
      try {
        const client = new S3Client(host, where, settings, send, watch.moved);
        return await client.list(dependencies.listPageSize ?? null, watch.signal);
      } finally {
        watch.clear();
      }
    },
    async close() {},
  };
}

type Headers = Record<string, string>;

class S3Client {
  constructor(
    private readonly host: HostConnection,
    private readonly object: S3Object,
    private readonly settings: S3Settings,
    private readonly fetchFn: typeof fetch,
    /** A sign of progress: a body's bytes taken, an answer, a byte of one. */
    private readonly moved: () => void,
  ) {}

  async put(file: OutgoingFile, sized: SizedSource, signal: AbortSignal): Promise<Delivered> {
    const body = requestBody(sized.chunks, file.size, { signal, moved: this.moved });
    const headers = { 'content-length': String(file.size), 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' };
    let response: Response;
    try {
      response = await this.request('PUT', this.object.url, headers, body, signal);
    } catch (error) {
      throw sendError(sized, signal, error, () => this.failed('PUT', fetchFailure(error)));
    }
    await this.check('PUT', response);
    if (sized.bytes() !== file.size) throw sized.failure() ?? invalid('Source changed size');
    const md5 = sized.md5();
    const etag = plainEtag(response.headers.get('etag'));
    if (etag !== null && etag !== md5) {
      // Nothing that differs from the source may keep the final name.
      await this.remove().catch(() => undefined);
      throw this.failed('PUT', `ETag ${etag} is not the MD5 ${md5} of the bytes sent`);
    }
    return { sent: sized.bytes(), md5 };
  }

  async get(signal: AbortSignal): Promise<FetchedFile> {
    const response = await this.call('GET', 'GET', '', {}, null, signal);
    if (!response.body) throw this.failed('GET', 'no body in the reply');
    const length = response.headers.get('content-length');
    const size = length !== null && /^\d+$/.test(length) ? Number(length) : null;
    return { size, stream: response.body as unknown as AsyncIterable<Uint8Array> };
  }

  /** The entries under the object's key as a prefix, one level deep, over every page of ListObjectsV2. */
  async list(pageSize: number | null, signal: AbortSignal): Promise<ListedEntry[]> {
    const entries: ListedEntry[] = [];
    let token: string | null = null;
    do {
      const page = await this.listPage(pageSize, token, signal);
      entries.push(...listedObjects(page, this.object.key));
      token = xmlValue(page, 'IsTruncated') === 'true' ? (xmlValue(page, 'NextContinuationToken') ?? '') : null;
      // Stopping there would leave the rest of the directory out as if it were not there.
      if (token === '') throw this.failed('ListObjectsV2', 'a truncated page with no NextContinuationToken');
    } while (token !== null);
    return uniqueEntries(entries);
  }

  private async listPage(pageSize: number | null, token: string | null, signal: AbortSignal) {
    const query = queryOf({
      'list-type': '2',
      prefix: this.object.key,
      delimiter: '/',
      'max-keys': pageSize === null ? null : String(pageSize),
      'continuation-token': token,
    });
    const response = await this.call('ListObjectsV2', 'GET', `?${query}`, {}, null, signal);
    return this.replyText('ListObjectsV2', response, signal);
  }

  async multipart(file: OutgoingFile, sized: SizedSource, signal: AbortSignal): Promise<Delivered> {
    const created = await this.call('CreateMultipartUpload', 'POST', '?uploads', {}, null, signal);
    const uploadId = xmlValue(await answerText(created, this.moved), 'UploadId');
    if (!uploadId) throw this.failed('CreateMultipartUpload', 'no UploadId in the reply');
    const query = `uploadId=${encodeURIComponent(uploadId)}`;
    // One signal for every part: the caller's abort or the first part that fails stops them all.
    const parts = new AbortController();
    const stop = () => parts.abort(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    // An abort while the upload was being created fired before the listener was there.
    if (signal.aborted) stop();
    try {
      const etags = await this.uploadParts(sized, partSizeFor(this.settings.partSize, file.size), query, parts);
      if (sized.bytes() !== file.size) throw sized.failure() ?? invalid('Source changed size');
      const xml = completeXml(etags);
      const headers = { 'content-type': 'application/xml', 'x-amz-content-sha256': sha256(xml) };
      const done = await this.call('CompleteMultipartUpload', 'POST', `?${query}`, headers, xml, parts.signal);
      // S3 may answer 200 and still fail the completion, with an Error document as the body.
      // S3 may send spaces while it completes a large upload: each is progress.
      const reply = await answerText(done, this.moved);
      if (/<Error>/.test(reply)) throw this.failed('CompleteMultipartUpload', s3Reason(reply));
      const md5 = sized.md5();
      const etag = plainEtag(xmlValue(reply, 'ETag') ?? done.headers.get('etag'));
      // A multipart ETag is not an MD5 on AWS (`…-N`); some services give the whole file's.
      if (etag !== null && etag !== md5) {
        throw this.failed('CompleteMultipartUpload', `ETag ${etag} is not the MD5 ${md5} of the bytes sent`);
      }
      return { sent: sized.bytes(), md5 };
    } catch (error) {
      parts.abort(error);
      await this.abortUpload(query);
      throw sized.failure() ?? (signal.aborted ? (signal.reason ?? error) : error);
    } finally {
      signal.removeEventListener('abort', stop);
    }
  }

  /** Parts of `partSize` bytes (the last one shorter), up to `threads` in flight; their ETags in order. */
  private uploadParts(sized: SizedSource, partSize: number, query: string, parts: AbortController) {
    return uploadInParts(partsOf(sized.chunks, partSize), this.settings.threads, parts, (n, part, signal) =>
      this.uploadPart(n, part, query, signal),
    );
  }

  private async uploadPart(n: number, part: Uint8Array, query: string, signal: AbortSignal) {
    const md5 = createHash('md5').update(part).digest();
    const headers = {
      'content-length': String(part.byteLength),
      'content-md5': md5.toString('base64'),
      'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
    };
    // Streamed, so that the bytes the connection takes show the part is moving.
    const body = requestBody(slicesOf(part), part.byteLength, { signal, moved: this.moved });
    const response = await this.call(`UploadPart ${n}`, 'PUT', `?partNumber=${n}&${query}`, headers, body, signal);
    await response.body?.cancel();
    const etag = response.headers.get('etag');
    const plain = plainEtag(etag);
    if (!etag || (plain !== null && plain !== md5.toString('hex'))) {
      throw this.failed(`UploadPart ${n}`, `ETag ${etag} is not the MD5 of the part`);
    }
    return etag;
  }

  /** Best effort: the upload's parts would otherwise be kept (and billed) until a lifecycle rule. */
  private async abortUpload(query: string) {
    const signal = AbortSignal.timeout(CLEANUP_MS);
    await this.call('AbortMultipartUpload', 'DELETE', `?${query}`, {}, null, signal)
      .then((r) => r.body?.cancel())
      .catch(() => undefined);
  }

  private async remove() {
    const r = await this.call('DELETE', 'DELETE', '', {}, null, AbortSignal.timeout(CLEANUP_MS));
    await r.body?.cancel();
  }

  /** A signed request that must succeed; network failures and error replies both say what failed. */
  private async call(
    what: string,
    method: string,
    query: string,
    headers: Headers,
    body: RequestInit['body'],
    signal: AbortSignal,
  ) {
    const url = new URL(this.object.url);
    url.search = query;
    let response: Response;
    try {
      response = await this.request(method, url, headers, body, signal);
    } catch (error) {
      if (signal.aborted) throw signal.reason ?? error;
      throw this.failed(what, fetchFailure(error));
    }
    await this.check(what, response);
    return response;
  }

  private async request(method: string, url: URL, headers: Headers, body: RequestInit['body'], signal: AbortSignal) {
    const credentials = { accessKeyId: this.host.login, secretAccessKey: this.host.password ?? '', sessionToken: null };
    const request = { method, url, headers, body, signal };
    const response = await signedS3Request(this.fetchFn, credentials, this.settings.region, request);
    this.moved();
    return response;
  }

  /** A whole answer (a page of a listing can be more than a failure's reason keeps); the abort's reason on abort. */
  private async replyText(what: string, response: Response, signal: AbortSignal) {
    try {
      const text = await response.text();
      this.moved();
      return text;
    } catch (error) {
      if (signal.aborted) throw signal.reason ?? error;
      throw this.failed(what, fetchFailure(error));
    }
  }

  private async check(what: string, response: Response) {
    if (response.ok) return;
    const text = await answerText(response, this.moved).catch(() => '');
    throw this.failed(what, `${response.status} ${s3Reason(text)}`.trim());
  }

  private failed(what: string, reason: string) {
    return new Error(`S3 ${what} ${this.object.label} failed: ${reason}`);
  }
}

/** A part in slices of 64 KiB, as a request body takes them. */
export async function* slicesOf(part: Uint8Array): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < part.byteLength; at += 64 * 1024) yield part.subarray(at, at + 64 * 1024);
}

/**
 * Chunks regrouped into parts of exactly `size` bytes, the last one shorter. Each part is a buffer
 * from `buffer()`, a new one unless the caller hands back those it has sent.
 */
export async function* partsOf(
  chunks: AsyncIterable<Uint8Array>,
  size: number,
  buffer: () => Uint8Array = () => new Uint8Array(size),
): AsyncGenerator<Uint8Array> {
  let part = buffer();
  let filled = 0;
  for await (const chunk of chunks) {
    for (let at = 0; at < chunk.byteLength; ) {
      const n = Math.min(size - filled, chunk.byteLength - at);
      part.set(chunk.subarray(at, at + n), filled);
      filled += n;
      at += n;
      if (filled === size) {
        yield part;
        part = buffer();
        filled = 0;
      }
    }
  }
  if (filled > 0) yield part.subarray(0, filled);
}

/** The items of `items` until `signal` aborts, which ends the iteration with its reason at once. */
export async function* untilAborted<T>(items: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T> {
  const it = items[Symbol.asyncIterator]();
  try {
    for (;;) {
      signal.throwIfAborted();
      const next = await nextUnlessAborted(it, signal);
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // Not awaited: a generator stalled in a read only returns once that read settles.
    void it.return?.()?.catch(() => undefined);
  }
}

/**
 * The iterator's next item, or the abort's reason as soon as `signal` aborts. Its listener is removed
 * once the item comes: raced against one promise of the whole iteration instead, each item stayed
 * referenced by that promise's reactions until the end, a whole file's bytes for a stored file.
 */
function nextUnlessAborted<T>(it: AsyncIterator<T>, signal: AbortSignal) {
  return new Promise<IteratorResult<T>>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    it.next().then(
      (next) => {
        signal.removeEventListener('abort', onAbort);
        resolve(next);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Parts given to `upload` with their numbers (from 1), at most `threads` in flight; their results
 * in order. The first failure aborts `parts` (so the others and the source stop) and is thrown once
 * none is in flight; the source is read under `parts.signal`, so an abort need not wait for a
 * stalled source.
 */
export async function uploadInParts<T>(
  source: AsyncIterable<Uint8Array>,
  threads: number,
  parts: AbortController,
  upload: (n: number, part: Uint8Array, signal: AbortSignal) => Promise<T>,
): Promise<T[]> {
  const results: T[] = [];
  const inFlight = new Set<Promise<void>>();
  let failure: { error: unknown } | null = null;
  let number = 0;
  try {
    for await (const part of untilAborted(source, parts.signal)) {
      const n = ++number;
      const uploading = upload(n, part, parts.signal).then(
        (result) => {
          results[n - 1] = result;
        },
        (error) => {
          failure ??= { error };
          parts.abort(error);
        },
      );
      inFlight.add(uploading);
      void uploading.finally(() => inFlight.delete(uploading));
      while (inFlight.size >= threads && !failure) await Promise.race(inFlight);
      if (failure) break;
      parts.signal.throwIfAborted();
    }
  } finally {
    await Promise.allSettled(inFlight);
  }
  if (failure) throw (failure as { error: unknown }).error;
  return results;
}
