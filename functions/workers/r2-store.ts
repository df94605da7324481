import { messageOf } from '../../core/common/errors.ts';
import type { SourceRange } from '../../core/dissemination/send.ts';
import { type ListedObject, type ObjectStore, type StoredBytes, StoredObjectMissing } from '../../core/store/ports.ts';
import type { R2BucketLike } from '../transfer-methods/r2.ts';
import { requestBody } from '../transfer-methods/sized-source.ts';
import { ByteCursor } from './byte-cursor.ts';
import { chunksOf, type R2SourceBucket } from './r2-sources.ts';

/** A part of a multipart upload, as R2 answers it and takes it back to complete the upload. */
interface R2UploadedPart {
  partNumber: number;
  etag: string;
}

/** What the store uses of R2's multipart upload. */
export interface R2MultipartUploadLike {
  uploadPart(partNumber: number, value: ReadableStream<Uint8Array> | Uint8Array): Promise<R2UploadedPart>;
  abort(): Promise<void>;
  complete(parts: R2UploadedPart[]): Promise<unknown>;
}

/** What the store uses of an R2 bucket binding: the sources' reads and the method's put, and more. */
export interface R2StoreBucket extends R2BucketLike, R2SourceBucket {
  put(key: string, value: ReadableStream<Uint8Array> | Uint8Array): Promise<{ etag: string; size: number } | null>;
  delete(keys: string | string[]): Promise<void>;
  createMultipartUpload(key: string): Promise<R2MultipartUploadLike>;
  list(options: { prefix?: string; cursor?: string; limit?: number }): Promise<{
    objects: Array<{ key: string; size: number; uploaded: Date }>;
    truncated: boolean;
    cursor?: string;
  }>;
}

/** The R2 bucket bound as `binding`, when that binding is one. */
export function storeBucketOf(env: object, binding: string): R2StoreBucket | null {
  const bound = (env as Record<string, unknown>)[binding];
  if (typeof bound !== 'object' || bound === null) return null;
  const methods = ['put', 'get', 'head', 'delete', 'list', 'createMultipartUpload'];
  return methods.every((m) => typeof (bound as Record<string, unknown>)[m] === 'function')
    ? (bound as R2StoreBucket)
    : null;
}

export interface R2StoreOptions {
  /** Keys are stored under `<prefix>/`; none by default. */
  prefix?: string;
  /** Names the store in messages: `R2 binding ECPDS_STORE`. */
  description: string;
  /**
   * The size of each part of an upload but the last (R2: at least 5 MiB, and all the same); larger
   * objects are uploaded in parts, smaller ones in one put.
   */
  partSize?: number;
  /** Keys asked per page of a listing (R2 answers at most 1000). */
  listPageSize?: number;
}

const MIB = 1024 * 1024;
/** R2's bounds: parts of 5 MiB to 5 GiB, 10 000 of them at most; 1000 keys per delete. */
const MIN_PART = 5 * MIB;
const MAX_PART = 5 * 1024 * MIB;
const MAX_PARTS = 10_000;
const DELETE_BATCH = 1000;
/** 16 MiB: a 1 GiB object in 64 requests, and at most that much in memory when the size is unknown. */
const DEFAULT_PART = 16 * MIB;

/**
 * The service's store in an R2 bucket bound to the Worker. A write of a known size streams: one put
 * through a fixed-length body, or a multipart upload whose parts stream the same way; of an unknown
 * size, parts are gathered in memory one at a time. A put is atomic and a multipart upload is only
 * visible once completed (it is aborted on any failure), so a failed write leaves nothing under the key.
 */
export function r2ObjectStore(bucket: R2StoreBucket, options: R2StoreOptions): ObjectStore {
  const prefix = (options.prefix ?? '').replace(/^\/+|\/+$/g, '');
  const under = prefix === '' ? '' : `${prefix}/`;
  const partSize = options.partSize ?? DEFAULT_PART;
  if (!Number.isInteger(partSize) || partSize < MIN_PART || partSize > MAX_PART) {
    throw new RangeError(`R2 part size must be from ${MIN_PART} to ${MAX_PART} bytes, got ${partSize}`);
  }
  const listPageSize = options.listPageSize ?? 1000;
  const fullKey = (key: string) => `${under}${key}`;

  return {
    description: options.description,

    async write(key, bytes, signal, size) {
      signal.throwIfAborted();
      const cursor = new ByteCursor(bytes, signal);
      const target = fullKey(key);
      const fault = new SizeFault(key, size ?? 0);
      try {
        if (size === undefined) await writeUnsized(bucket, target, cursor, partSize);
        else if (size <= partSize) await bucket.put(target, exactBody(cursor, size, true, fault));
        else await writeSized(bucket, target, cursor, Math.max(partSize, Math.ceil(size / MAX_PARTS)), fault);
      } catch (error) {
        // The source's own fault or the abort says more than what R2 made of the body that errored.
        throw fault.error ?? (signal.aborted ? signal.reason : error);
      } finally {
        cursor.close();
      }
    },

    async read(key, signal, range) {
      signal.throwIfAborted();
      const target = fullKey(key);
      let object: Awaited<ReturnType<R2StoreBucket['get']>>;
      try {
        object = await bucket.get(target, range && { range: r2Range(range) });
      } catch (error) {
        // R2 refuses a range that starts past the end: answered with the size and no bytes.
        const whole = range ? await bucket.head(target).catch(() => undefined) : undefined;
        if (whole === null) throw new StoredObjectMissing(key);
        if (whole && range && range.start >= whole.size) return { size: whole.size, stream: noBytes() };
        throw new Error(`Stored object ${key} could not be read: ${messageOf(error)}`);
      }
      if (!object) throw new StoredObjectMissing(key);
      return { size: object.size, stream: chunksOf(object.body, signal) } satisfies StoredBytes;
    },

    async remove(keys) {
      for (let i = 0; i < keys.length; i += DELETE_BATCH) {
        await bucket.delete(keys.slice(i, i + DELETE_BATCH).map(fullKey));
      }
    },

    async *list(): AsyncIterable<ListedObject> {
      let cursor: string | undefined;
      do {
        const page = await bucket.list({ prefix: under, cursor, limit: listPageSize });
        for (const object of page.objects) {
          yield { key: object.key.slice(under.length), size: object.size, modifiedAt: object.uploaded };
        }
        cursor = page.truncated ? page.cursor : undefined;
      } while (cursor);
    },
  };
}

/** Of an unknown size: the first part decides between one put and a multipart upload of buffered parts. */
async function writeUnsized(bucket: R2StoreBucket, key: string, cursor: ByteCursor, partSize: number) {
  const first = await cursor.fill(partSize);
  if (first.byteLength < partSize || (await cursor.atEnd())) {
    await bucket.put(key, first);
    return;
  }
  let pending: Uint8Array | null = first;
  await uploadInParts(bucket, key, async () => {
    // One part in memory at a time: the next is read once the previous one is uploaded.
    const part = pending ?? (await cursor.fill(partSize));
    pending = null;
    return part.byteLength > 0 ? part : null;
  });
}

/** Of a known size: parts of `partSize` bytes but the last, each streamed through a fixed-length body. */
async function writeSized(bucket: R2StoreBucket, key: string, cursor: ByteCursor, partSize: number, fault: SizeFault) {
  const size = fault.size;
  let start = 0;
  await uploadInParts(bucket, key, async () => {
    if (start >= size) return null;
    const length = Math.min(partSize, size - start);
    start += length;
    return exactBody(cursor, length, start === size, fault);
  });
}

/** Uploads the parts `nextPart` gives, one at a time, until it gives null; aborts the upload on any failure. */
async function uploadInParts(
  bucket: R2StoreBucket,
  key: string,
  nextPart: () => Promise<ReadableStream<Uint8Array> | Uint8Array | null>,
) {
  const upload = await bucket.createMultipartUpload(key);
  try {
    const parts: R2UploadedPart[] = [];
    for (let part = await nextPart(); part; part = await nextPart()) {
      parts.push(await upload.uploadPart(parts.length + 1, part));
    }
    await upload.complete(parts);
  } catch (error) {
    await upload.abort().catch(() => undefined);
    throw error;
  }
}

/** A write's source that did not hold to the size announced: what it did, kept to be thrown in the end. */
class SizeFault {
  error: Error | null = null;

  constructor(
    readonly key: string,
    readonly size: number,
  ) {}

  raise(what: string): Error {
    this.error = new Error(`Stored object ${this.key} not written: ${what}, ${this.size} bytes announced`);
    return this.error;
  }
}

/**
 * A body of exactly `length` bytes of the cursor, for R2, which takes streams of a known length only.
 * A source that ends short, or (`last`) goes on past the announced size, errors the body before its
 * last byte goes out, so that R2 never completes the object.
 */
function exactBody(cursor: ByteCursor, length: number, last: boolean, fault: SizeFault): ReadableStream<Uint8Array> {
  const fail = (what: string) => fault.raise(what);
  async function* pieces() {
    if (length === 0 && last && !(await cursor.atEnd())) throw fail('the bytes went on past them');
    for (let left = length; left > 0; ) {
      const piece = await cursor.next(left);
      if (!piece) throw fail(`the bytes ended after ${cursor.bytesRead}`);
      left -= piece.byteLength;
      if (left === 0 && last && !(await cursor.atEnd())) throw fail('the bytes went on past them');
      yield piece;
    }
  }
  return requestBody(pieces(), length);
}

const r2Range = (range: SourceRange) => ({ offset: range.start, length: range.end - range.start + 1 });

async function* noBytes(): AsyncIterable<Uint8Array> {}
