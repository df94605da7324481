import { bytesToBase64 } from '../common/encoding.ts';
import { bytesToHex, type Hashing } from '../common/hashing.ts';

/** The sums of a file's bytes, computed in the pass that stores them. */
export interface Sums {
  size: number;
  md5: string;
  sha512: string;
}

/** A stream passed through unchanged, with its sums once it has been read to the end. */
export interface Summed {
  stream: AsyncIterable<Uint8Array>;
  sums(): Promise<Sums>;
}

/**
 * How a retrieval sums the bytes it stores. A runtime with threads to spare hashes large files off
 * the thread that moves the bytes (functions/node/parallel-sums.ts); `summing` with the ports' hashing
 * is the default.
 */
export type Summing = (stream: AsyncIterable<Uint8Array>, size: number) => Summed;

/**
 * Passes a stream through while counting and hashing it; `sums()` is complete once the stream is.
 * One pass for the copy and both sums: the file is read once, whatever is asked of it later. Each
 * chunk is hashed once its reader asks for the next: a store that writes a chunk without waiting
 * before asking (the directory store) hashes it while the disk writes it.
 */
export function summing(stream: AsyncIterable<Uint8Array>, hashing: Hashing): Summed {
  const md5 = hashing.digest('md5');
  const sha512 = hashing.digest('sha512');
  let size = 0;
  let ended = false;
  async function* passed() {
    for await (const chunk of stream) {
      yield chunk;
      md5.update(chunk);
      sha512.update(chunk);
      size += chunk.byteLength;
    }
    ended = true;
  }
  return {
    stream: passed(),
    async sums() {
      if (!ended) throw new Error('The sums of a stream not read to its end');
      return { size, md5: bytesToHex(md5.digest()), sha512: bytesToBase64(sha512.digest()) };
    },
  };
}
