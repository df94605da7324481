import { createHash } from 'node:crypto';
import type { SourceRange } from '../../core/dissemination/send.ts';
import { type ListedObject, type ObjectStore, type StoredBytes, StoredObjectMissing } from '../../core/store/ports.ts';
import { partsOf, slicesOf, untilAborted, uploadInParts } from '../transfer-methods/s3.ts';
import { DNS_BUCKET, IP_HOST, MAX_PARTS, partSizeFor } from '../transfer-methods/s3-target.ts';
import {
  completeXml,
  encodeKey,
  escapeXml,
  plainEtag,
  type S3Credentials,
  s3Reason,
  sha256,
  signedS3Request,
  xmlElements,
  xmlValue,
} from '../transfer-methods/s3-wire.ts';
import { fetchFailure, requestBody } from '../transfer-methods/sized-source.ts';
import { answerText } from '../transfer-methods/upload-watch.ts';

const MIB = 1024 * 1024;

export interface S3StoreOptions {
  bucket: string;
  /** Objects go under it (`<prefix>/<key>`); '' for the bucket's root. Slashes around it are ignored. */
  prefix: string;
  /** Any S3-compatible service (`http://127.0.0.1:9000`, possibly under a path), addressed path style; null: AWS. */
  endpoint: string | null;
  region: string;
  credentials: S3Credentials;
  /** Objects smaller than this go in one PUT, the others in parts of this size (default 16 MiB; S3's least is 5). */
  partSize?: number;
  /** Parts of a multipart upload in flight at once, each holding a part in memory (default 4). */
  partsInFlight?: number;
  /** Keys per ListObjectsV2 page (default and S3's most: 1000). */
  listPageSize?: number;
  fetch?: typeof fetch;
}

/** DeleteObjects takes at most this many keys. */
const DELETE_BATCH = 1000;
/** How long aborting a multipart upload may take once its write has failed. */
const CLEANUP_MS = 30_000;

/**
 * The store on an S3-compatible bucket, over fetch with SigV4. A PUT and a completed multipart
 * upload are atomic on S3, so an object is never seen half written and needs no temporary name; a
 * failed or aborted multipart upload is aborted, its parts removed (best effort: should that fail
 * too, a lifecycle rule `AbortIncompleteMultipartUpload` on the bucket removes them). Parts and small
 * objects carry their Content-MD5, checked by the server. Memory: at most `partsInFlight` + 1 parts.
 */
export function s3ObjectStore(options: S3StoreOptions): ObjectStore {
  return new S3Store(options);
}

class S3Store implements ObjectStore {
  readonly description: string;
  private readonly prefix: string;
  private readonly bucketUrl: URL;
  private readonly objectBase: string;
  private readonly partSize: number;
  private readonly partsInFlight: number;
  private readonly listPageSize: number;
  // Called unbound: Workers refuses a fetch invoked as a method of another object.
  private readonly send: typeof fetch;

  constructor(private readonly options: S3StoreOptions) {
    const trimmed = options.prefix.replace(/^\/+|\/+$/g, '');
    this.prefix = trimmed === '' ? '' : `${trimmed}/`;
    const endpoint = new URL(options.endpoint ?? `https://s3.${options.region}.amazonaws.com`);
    const base = endpoint.pathname.replace(/\/+$/, '');
    const virtual = options.endpoint === null && !IP_HOST.test(endpoint.hostname) && DNS_BUCKET.test(options.bucket);
    this.objectBase = virtual
      ? `${endpoint.protocol}//${options.bucket}.${endpoint.host}${base}/`
      : `${endpoint.origin}${base}/${encodeKey(options.bucket)}/`;
    // Path style names the bucket without a trailing slash: s3rver reads `/bucket/` as an object's URL.
    this.bucketUrl = new URL(virtual ? this.objectBase : this.objectBase.slice(0, -1));
    const where = trimmed === '' ? options.bucket : `${options.bucket}/${trimmed}`;
    this.description = `s3://${where} at ${endpoint.origin}${base}`;
    this.partSize = options.partSize ?? 16 * MIB;
    this.partsInFlight = Math.max(1, options.partsInFlight ?? 4);
    this.listPageSize = Math.min(1000, Math.max(1, options.listPageSize ?? 1000));
    const fetchFn = options.fetch;
    this.send = fetchFn ?? ((input, init) => fetch(input, init));
  }

  async write(key: string, bytes: AsyncIterable<Uint8Array>, signal: AbortSignal, size?: number): Promise<void> {
    const url = this.objectUrl(key);
    signal.throwIfAborted();
    const counted = exactly(bytes, size, () => `${this.description}: ${key}`);
    // A known size chooses at once; an unknown one by whether the bytes fill more than a part.
    const partSize = size === undefined ? this.partSize : partSizeFor(this.partSize, size);
    // Part buffers are used again once sent: fresh memory costs a page fault per 4 KiB touched.
    const sent: Uint8Array[] = [];
    const release = (part: Uint8Array) => part.byteLength === partSize && sent.push(part);
    const buffer = () => sent.pop() ?? new Uint8Array(partSize);
    const parts = untilAborted(partsOf(counted, partSize, buffer), signal)[Symbol.asyncIterator]();
    if (size !== undefined && size >= this.partSize) return this.multipart(key, url, parts, [], release, signal);
    const first = await parts.next();
    if (first.done) return this.put(key, url, new Uint8Array(0), signal);
    if (first.value.byteLength < partSize) return this.put(key, url, first.value, signal);
    const second = await parts.next();
    if (second.done) return this.put(key, url, first.value, signal);
    return this.multipart(key, url, parts, [first.value, second.value], release, signal);
  }

  private async put(key: string, url: URL, body: Uint8Array, signal: AbortSignal) {
    const md5 = createHash('md5').update(body).digest();
    const headers = { 'content-length': String(body.byteLength), 'content-md5': md5.toString('base64') };
    const response = await this.call('PutObject', key, 'PUT', url, headers, body, signal);
    await response.body?.cancel();
    checkEtag(response.headers.get('etag'), md5, () => this.failed('PutObject', key, 'the ETag is not the MD5 sent'));
  }

  private async multipart(
    key: string,
    url: URL,
    rest: AsyncIterator<Uint8Array>,
    taken: Uint8Array[],
    release: (part: Uint8Array) => void,
    signal: AbortSignal,
  ) {
    const created = await this.call('CreateMultipartUpload', key, 'POST', withQuery(url, 'uploads'), {}, null, signal);
    const uploadId = xmlValue(await answerText(created, noProgress), 'UploadId');
    if (!uploadId) throw this.failed('CreateMultipartUpload', key, 'no UploadId in the reply');
    const upload = withQuery(url, `uploadId=${encodeURIComponent(uploadId)}`);
    // One signal for every part: the caller's abort or the first part that fails stops them all.
    const parts = new AbortController();
    const stop = () => parts.abort(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    if (signal.aborted) stop();
    try {
      const etags = await uploadInParts(
        resumed(taken, rest),
        this.partsInFlight,
        parts,
        async (n, part, partSignal) => {
          const etag = await this.uploadPart(key, upload, n, part, partSignal);
          // Only now: the request has read the whole part.
          release(part);
          return etag;
        },
      );
      const xml = completeXml(etags);
      const headers = { 'content-type': 'application/xml', 'x-amz-content-sha256': sha256(xml) };
      const done = await this.call('CompleteMultipartUpload', key, 'POST', upload, headers, xml, parts.signal);
      // S3 may answer 200 and still fail the completion, with an Error document as the body.
      const reply = await answerText(done, noProgress);
      if (/<Error>/.test(reply)) throw this.failed('CompleteMultipartUpload', key, s3Reason(reply));
    } catch (error) {
      parts.abort(error);
      await this.abortUpload(key, upload);
      throw signal.aborted ? (signal.reason ?? error) : error;
    } finally {
      signal.removeEventListener('abort', stop);
      // Not awaited: a source stalled in a read only returns once that read settles.
      void rest.return?.()?.catch(() => undefined);
    }
  }

  private async uploadPart(key: string, upload: URL, n: number, part: Uint8Array, signal: AbortSignal) {
    if (n > MAX_PARTS) throw this.failed('UploadPart', key, `more than ${MAX_PARTS} parts of ${part.byteLength} bytes`);
    const md5 = createHash('md5').update(part).digest();
    const headers = { 'content-length': String(part.byteLength), 'content-md5': md5.toString('base64') };
    const url = new URL(upload);
    url.searchParams.set('partNumber', String(n));
    // Streamed in slices rather than given whole: fetch copies a whole Uint8Array body first.
    const body = requestBody(slicesOf(part), part.byteLength, { signal, moved: noProgress });
    const response = await this.call(`UploadPart ${n}`, key, 'PUT', url, headers, body, signal);
    await response.body?.cancel();
    const etag = response.headers.get('etag');
    if (!etag) throw this.failed(`UploadPart ${n}`, key, 'no ETag in the reply');
    checkEtag(etag, md5, () => this.failed(`UploadPart ${n}`, key, 'the ETag is not the MD5 of the part'));
    return etag;
  }

  private async abortUpload(key: string, upload: URL) {
    const signal = AbortSignal.timeout(CLEANUP_MS);
    await this.call('AbortMultipartUpload', key, 'DELETE', upload, {}, null, signal)
      .then((r) => r.body?.cancel())
      .catch(() => undefined);
  }

  async read(key: string, signal: AbortSignal, range?: SourceRange): Promise<StoredBytes> {
    const headers: Record<string, string> = range ? { range: `bytes=${range.start}-${range.end}` } : {};
    const response = await this.request('GetObject', key, 'GET', this.objectUrl(key), headers, null, signal);
    if (response.status === 404) {
      const text = await answerText(response, noProgress).catch(() => '');
      // A missing bucket is the store's fault, not a lost object to retrieve again.
      if (xmlValue(text, 'Code') === 'NoSuchBucket') throw this.failed('GetObject', key, `404 ${s3Reason(text)}`);
      throw new StoredObjectMissing(key);
    }
    await this.check('GetObject', key, response);
    const size = wholeSize(response);
    if (size === null || !response.body) {
      await response.body?.cancel();
      throw this.failed('GetObject', key, 'no object size in the reply');
    }
    return { size, stream: response.body as unknown as AsyncIterable<Uint8Array> };
  }

  async remove(keys: readonly string[]): Promise<void> {
    for (let at = 0; at < keys.length; at += DELETE_BATCH) {
      const batch = keys.slice(at, at + DELETE_BATCH);
      const objects = batch.map((key) => `<Object><Key>${escapeXml(this.fullKey(key))}</Key></Object>`).join('');
      const xml = `<Delete><Quiet>true</Quiet>${objects}</Delete>`;
      const body = new TextEncoder().encode(xml);
      const headers = {
        'content-type': 'application/xml',
        'content-length': String(body.byteLength),
        // AWS refuses a DeleteObjects without it.
        'content-md5': createHash('md5').update(body).digest('base64'),
        'x-amz-content-sha256': sha256(xml),
      };
      const what = `DeleteObjects of ${batch.length}`;
      const signal = AbortSignal.timeout(CLEANUP_MS);
      const response = await this.call(what, '', 'POST', withQuery(this.bucketUrl, 'delete'), headers, body, signal);
      const reply = await answerText(response, noProgress);
      // Quiet mode lists only the keys that failed; an absent key is a success.
      const failedKey = xmlElements(reply, 'Error')[0];
      if (failedKey !== undefined) throw this.failed(what, xmlValue(failedKey, 'Key') ?? '', s3Reason(failedKey));
    }
  }

  async *list(): AsyncIterable<ListedObject> {
    let token: string | null = null;
    do {
      const url = new URL(this.bucketUrl);
      url.searchParams.set('list-type', '2');
      url.searchParams.set('max-keys', String(this.listPageSize));
      if (this.prefix !== '') url.searchParams.set('prefix', this.prefix);
      if (token !== null) url.searchParams.set('continuation-token', token);
      const response = await this.call('ListObjectsV2', '', 'GET', url, {}, null, AbortSignal.timeout(CLEANUP_MS));
      const reply = await response.text();
      for (const entry of xmlElements(reply, 'Contents')) {
        const key = xmlValue(entry, 'Key');
        if (key === null || !key.startsWith(this.prefix)) continue;
        yield {
          key: key.slice(this.prefix.length),
          size: Number(xmlValue(entry, 'Size') ?? 0),
          modifiedAt: new Date(xmlValue(entry, 'LastModified') ?? 0),
        };
      }
      token = xmlValue(reply, 'IsTruncated') === 'true' ? xmlValue(reply, 'NextContinuationToken') : null;
    } while (token !== null);
  }

  private fullKey(key: string) {
    // `.` and `..` segments would be resolved away by URL parsing: another object than the key names.
    if (key === '' || key.split('/').some((s) => s === '.' || s === '..')) {
      throw new Error(`${this.description}: ${JSON.stringify(key)} is no object key`);
    }
    return this.prefix + key;
  }

  private objectUrl(key: string) {
    return new URL(this.objectBase + encodeKey(this.fullKey(key)));
  }

  /** A signed request; a network failure says which request on which store failed. */
  private async request(
    what: string,
    key: string,
    method: string,
    url: URL,
    headers: Record<string, string>,
    body: RequestInit['body'],
    signal: AbortSignal,
  ) {
    try {
      return await signedS3Request(this.send, this.options.credentials, this.options.region, {
        method,
        url,
        headers,
        body,
        signal,
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason ?? error;
      throw this.failed(what, key, fetchFailure(error));
    }
  }

  /** A signed request that must succeed; error replies say their status and S3 code. */
  private async call(...args: Parameters<S3Store['request']>) {
    const response = await this.request(...args);
    await this.check(args[0], args[1], response);
    return response;
  }

  private async check(what: string, key: string, response: Response) {
    if (response.ok) return;
    const text = await answerText(response, noProgress).catch(() => '');
    throw this.failed(what, key, `${response.status} ${s3Reason(text)}`.trim());
  }

  private failed(what: string, key: string, reason: string) {
    return new Error(`Store ${this.description}: ${what}${key ? ` of ${key}` : ''} failed: ${reason}`);
  }
}

const noProgress = () => undefined;

const withQuery = (url: URL, query: string) => {
  const copy = new URL(url);
  copy.search = query;
  return copy;
};

function checkEtag(etag: string | null, md5: Buffer, failed: () => Error) {
  const plain = plainEtag(etag);
  if (plain !== null && plain !== md5.toString('hex')) throw failed();
}

/** The whole object's size: a range reply's `Content-Range: bytes a-b/size`, else its Content-Length. */
function wholeSize(response: Response): number | null {
  const header =
    response.status === 206 ? response.headers.get('content-range') : response.headers.get('content-length');
  const match = response.status === 206 ? /\/(\d+)$/.exec(header ?? '') : /^(\d+)$/.exec(header ?? '');
  return match ? Number(match[1]) : null;
}

/** The bytes, held to `size` when it is given: more fails at once, fewer at their end. */
async function* exactly(bytes: AsyncIterable<Uint8Array>, size: number | undefined, name: () => string) {
  let total = 0;
  for await (const chunk of bytes) {
    total += chunk.byteLength;
    if (size !== undefined && total > size) throw new Error(`${name()}: more than the ${size} bytes announced`);
    yield chunk;
  }
  if (size !== undefined && total !== size) throw new Error(`${name()}: ${total} bytes, not the ${size} announced`);
}

/** The parts already taken from `rest`, then the others. */
async function* resumed(taken: Uint8Array[], rest: AsyncIterator<Uint8Array>) {
  yield* taken;
  for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
}
