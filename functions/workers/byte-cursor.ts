/**
 * Reads a stream of chunks in pieces of the caller's choosing (a part of a multipart upload, a
 * fixed-length body), keeping what a piece left of a chunk for the next one. A read waits for the
 * source or the signal, whichever comes first: an aborted write ends at once, even on a source
 * that is slow to give its next chunk.
 */
export class ByteCursor {
  private readonly chunks: AsyncIterator<Uint8Array>;
  private rest: Uint8Array | null = null;
  private ended = false;
  private count = 0;

  constructor(
    source: AsyncIterable<Uint8Array>,
    private readonly signal: AbortSignal,
  ) {
    this.chunks = source[Symbol.asyncIterator]();
  }

  /** Bytes handed out so far. */
  get bytesRead(): number {
    return this.count;
  }

  /** At most `max` bytes (at least one), or null once the source has ended. */
  async next(max: number): Promise<Uint8Array | null> {
    if (!(await this.load())) return null;
    const chunk = this.rest as Uint8Array;
    const piece = chunk.byteLength > max ? chunk.subarray(0, max) : chunk;
    this.rest = piece === chunk ? null : chunk.subarray(max);
    this.count += piece.byteLength;
    return piece;
  }

  /** Whether the source has no byte left (it is read one chunk ahead to tell). */
  async atEnd(): Promise<boolean> {
    return !(await this.load());
  }

  /** Up to `size` bytes in one buffer, shorter only at the end of the source. */
  async fill(size: number): Promise<Uint8Array> {
    const buffer = new Uint8Array(size);
    let filled = 0;
    for (let piece = await this.next(size); piece; piece = filled < size ? await this.next(size - filled) : null) {
      buffer.set(piece, filled);
      filled += piece.byteLength;
    }
    return filled === size ? buffer : buffer.subarray(0, filled);
  }

  /** Lets the source go when it was not read to its end (not awaited: a read of it may be pending). */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    void this.chunks.return?.()?.catch(() => undefined);
  }

  /** Whether a chunk with bytes is at hand, reading the source for one if needed. */
  private async load(): Promise<boolean> {
    this.signal.throwIfAborted();
    while (!this.rest || this.rest.byteLength === 0) {
      if (this.ended) return false;
      const next = await untilAborted(this.chunks.next(), this.signal);
      if (next.done) {
        this.ended = true;
        return false;
      }
      this.rest = next.value;
    }
    return true;
  }
}

/** The promise's outcome, or the signal's reason if it aborts first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}
