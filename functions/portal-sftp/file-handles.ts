import type { SourceReader } from '../../core/dissemination/send.ts';
import type { PortalFile } from '../../core/portal/ports.ts';
import { downloadQuotaExceeded } from '../../core/portal/quota-ledger.ts';
import type { PortalTransfer } from '../../core/portal/transfers.ts';
import { openFileBytes } from '../../core/store/file-bytes.ts';
import type { ObjectStore } from '../../core/store/ports.ts';

/**
 * A file opened for reading over SFTP: its bytes as the movers and the HTTPS download read them
 * (openFileBytes: its stored copy once retrieved, else its source through the movers' reader). Clients read in order (OpenSSH's sftp keeps many reads
 * in flight, each at the next offset), so one stream from the first offset serves them all; a read
 * elsewhere (a `reget`, a client reading out of order) opens the source again at that offset.
 */
/**
 * The most one READ is answered with, as OpenSSH's sftp-server answers: what fits the largest packet
 * clients take (256 KiB) with room for its header. A longer READ gets a short read, which SFTP allows
 * (the client asks again for the rest): a READ of a whole large file never holds the file in memory.
 */
export const MAX_READ_LENGTH = 256 * 1024 - 1024;

export class DownloadHandle {
  /** Bytes answered so far (what the INH line and the traffic count). */
  sent = 0;
  private stream: AsyncIterator<Uint8Array> | null = null;
  private abort: AbortController | null = null;
  /** The offset of the first pending byte: where the open stream is. */
  private position = 0;
  /** Bytes read from the source and not yet answered, in order, as the source gave them. */
  private readonly pending = new ChunkQueue();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: ObjectStore | null,
    private readonly sources: SourceReader,
    readonly file: PortalFile & { destination: string },
    readonly transfer: PortalTransfer,
  ) {}

  /** Opens the source at the start, to tell a client at once when the file cannot be read. */
  async open() {
    await this.reopen(0);
  }

  /**
   * Up to `length` bytes at `offset` (at most MAX_READ_LENGTH, and no more than the user's download
   * quota lets go); null at the end of the file. One read at a time, in order of arrival.
   */
  read(offset: number, length: number): Promise<Buffer | null> {
    const next = this.queue.then(() => this.readNow(offset, length));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async readNow(offset: number, length: number): Promise<Buffer | null> {
    const size = this.file.size;
    if (offset >= size || length <= 0) return null;
    const wanted = Math.min(length, MAX_READ_LENGTH, size - offset);
    if (this.stream === null || offset !== this.position) await this.reopen(offset);
    while (this.pending.length < wanted) {
      const next = await this.stream!.next();
      if (next.done) throw new Error(`the source ended after ${this.position + this.pending.length} of ${size} bytes`);
      this.pending.push(Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength));
    }
    const allowed = this.transfer.allow(wanted);
    if (allowed === 0) throw downloadQuotaExceeded();
    this.position += allowed;
    this.sent += allowed;
    return this.pending.take(allowed);
  }

  private async reopen(offset: number) {
    this.closeSource();
    this.pending.clear();
    this.position = offset;
    if (offset >= this.file.size) return;
    this.abort = new AbortController();
    const ref = { source: this.file.source, objectKey: this.file.objectKey };
    const source = await openFileBytes(this.store, this.sources, ref, this.abort.signal, {
      start: offset,
      end: this.file.size - 1,
    });
    if (source.size !== this.file.size) {
      this.closeSource();
      throw new SourceChanged(this.file.path);
    }
    this.stream = source.stream[Symbol.asyncIterator]();
  }

  private closeSource() {
    this.abort?.abort();
    this.abort = null;
    this.stream = null;
  }

  /** Ends the download: the source closed, the transfer accounted for what was sent. */
  async close() {
    this.closeSource();
    await this.transfer.finish({ bytes: this.sent, file: this.sent > 0 ? this.file : null });
  }
}

/**
 * Chunks in order, taken from the front by length: a take within the first chunk is a view of it,
 * one across chunks copies their bytes once, into the answer.
 */
class ChunkQueue {
  length = 0;
  private chunks: Buffer[] = [];

  push(chunk: Buffer) {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  take(bytes: number): Buffer {
    const first = this.chunks[0]!;
    let out: Buffer;
    if (first.length >= bytes) {
      out = first.subarray(0, bytes);
      if (first.length === bytes) this.chunks.shift();
      else this.chunks[0] = first.subarray(bytes);
    } else {
      out = Buffer.allocUnsafe(bytes);
      let at = 0;
      while (at < bytes) {
        const chunk = this.chunks[0]!;
        const part = Math.min(chunk.length, bytes - at);
        chunk.copy(out, at, 0, part);
        at += part;
        if (part === chunk.length) this.chunks.shift();
        else this.chunks[0] = chunk.subarray(part);
      }
    }
    this.length -= bytes;
    return out;
  }

  clear() {
    this.chunks = [];
    this.length = 0;
  }
}

export class SourceChanged extends Error {
  constructor(path: string) {
    super(`${path} cannot be downloaded now: its data changed since it was registered`);
  }
}

/**
 * The bytes a client writes to a file it opened for writing, handed on in order as an async
 * iterable (the upload's body). Writes at the next offset are taken as they come; one ahead of it
 * waits for the gap to fill (a client may have several in flight), up to a bound. A write is answered
 * once the body took its bytes, so the client's writes in flight are the only buffer.
 */
export class UploadBody {
  private next = 0;
  private readonly early = new Map<number, { data: Buffer; done: (error: Error | null) => void }>();
  private readonly ready: Array<{ data: Buffer; done: (error: Error | null) => void }> = [];
  private wake: (() => void) | null = null;
  private ended = false;
  private failure: Error | null = null;

  static readonly MAX_EARLY = 256;

  /** Resolves once the body took the bytes; rejects when they can't be (out of order beyond the bound, or ended). */
  write(offset: number, data: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = (error: Error | null) => (error ? reject(error) : resolve());
      if (this.failure) return done(this.failure);
      if (this.ended) return done(new Error('the file is closed'));
      if (offset < this.next) return done(new Error('a write before what was already written is not supported'));
      if (offset > this.next) {
        if (this.early.size >= UploadBody.MAX_EARLY) return done(new Error('writes must follow one another'));
        this.early.set(offset, { data, done });
        return;
      }
      this.take(data, done);
      for (let e = this.early.get(this.next); e !== undefined; e = this.early.get(this.next)) {
        this.early.delete(this.next);
        this.take(e.data, e.done);
      }
    });
  }

  private take(data: Buffer, done: (error: Error | null) => void) {
    this.next += data.length;
    this.ready.push({ data, done });
    this.wake?.();
  }

  /** No more writes: the body ends once what was written is taken (a gap left open fails it). */
  end() {
    this.ended = true;
    if (this.early.size > 0) this.fail(new Error('the file was closed with a gap in what was written'));
    this.wake?.();
  }

  /** Fails the body and every write waiting on it. */
  fail(error: Error) {
    this.failure ??= error;
    for (const e of [...this.ready, ...this.early.values()]) e.done(error);
    this.ready.length = 0;
    this.early.clear();
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    while (true) {
      const item = this.ready.shift();
      if (item !== undefined) {
        item.done(null);
        yield item.data;
        continue;
      }
      if (this.failure) throw this.failure;
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = null;
    }
  }
}
