import type { SourceRange } from '../dissemination/send.ts';

/** An object's bytes as read from the store: `size` is always the whole object's. */
export interface StoredBytes {
  size: number;
  stream: AsyncIterable<Uint8Array>;
}

/** One object as a store lists it, for the sweep of objects no data file knows. */
export interface ListedObject {
  key: string;
  size: number;
  modifiedAt: Date;
}

/**
 * Where the service keeps its own copy of every registered file: a local directory, an
 * S3-compatible bucket, or an R2 binding. Objects are immutable: a key is written once.
 */
export interface ObjectStore {
  /** Names the store in messages and logs, never with a secret: `directory /var/lib/x/store`, `s3://b/p at https://…`. */
  readonly description: string;
  /**
   * Writes an object whole: it is readable under `key` only once every byte is in, and a write that
   * fails or is aborted leaves nothing under it. `size`, when known, lets an adapter choose between a
   * single and a multipart upload.
   */
  write(key: string, bytes: AsyncIterable<Uint8Array>, signal: AbortSignal, size?: number): Promise<void>;
  /** Opens an object, whole or a range of it; an absent one rejects with StoredObjectMissing. */
  read(key: string, signal: AbortSignal, range?: SourceRange): Promise<StoredBytes>;
  /** Removes objects; those already absent are not an error. */
  remove(keys: readonly string[]): Promise<void>;
  /** Every object of the store (under its prefix), for the sweep of objects no data file knows. */
  list(): AsyncIterable<ListedObject>;
}

/** A read of an object the store does not have. */
export class StoredObjectMissing extends Error {
  constructor(readonly key: string) {
    super(`Stored object ${key} not found`);
    this.name = 'StoredObjectMissing';
  }
}
