import { invalid } from '../common/errors.ts';
import type { Hashing } from '../common/hashing.ts';
import { countingMd5, type Delivered, type DeliveryFilter } from './deliver.ts';
import { filterExtension } from './filters.ts';
import type { OutgoingFile } from './methods.ts';

/** Compressed bytes kept aside until their size is known. */
export interface Spooled {
  size: number;
  read(): AsyncIterable<Uint8Array>;
  dispose(): Promise<void>;
}

/** Where a mover keeps a filter's output aside (a temporary file on Node); aborting stops the writing. */
export interface Spool {
  write(stream: AsyncIterable<Uint8Array>, signal: AbortSignal): Promise<Spooled>;
}

/**
 * A filtered delivery through a method that must announce its size before the first byte (S3,
 * HTTP, Azure, WebDAV): the filter's output is spooled first, then sent as a file of that size
 * under the filter's name. The result is as deliverFile's: the source's MD5, the filtered size
 * and MD5 as the filter's, the registered size checked against the bytes read.
 */
export async function sendSpooled(
  spool: Spool,
  file: OutgoingFile & { filter: DeliveryFilter },
  source: AsyncIterable<Uint8Array>,
  signal: AbortSignal,
  send: (file: OutgoingFile, source: AsyncIterable<Uint8Array>) => Promise<Delivered>,
  hashing: Hashing,
): Promise<Delivered> {
  const { filter } = file;
  const counted = countingMd5(hashing, source, file.md5);
  const out = countingMd5(hashing, filter.transform(counted.stream));
  const spooled = await spool.write(out.stream, signal);
  try {
    if (counted.bytes() !== file.size) {
      throw invalid(`Source changed size: ${counted.bytes()} bytes read, ${file.size} registered`);
    }
    const filtered = { ...file, target: `${file.target}${filterExtension(filter.name)}`, size: spooled.size };
    // The spooled bytes are the filter's: the source's MD5 is not theirs.
    const delivered = await send({ ...filtered, filter: null, md5: null }, spooled.read());
    return {
      sent: delivered.sent,
      md5: counted.md5(),
      filter: { name: filter.name, size: spooled.size, md5: out.md5() },
    };
  } finally {
    await spooled.dispose();
  }
}

/**
 * A spool in memory, for a runtime without files (a Worker): up to `limitBytes` of filtered output,
 * beyond which the attempt fails saying so.
 */
export function memorySpool(limitBytes: number): Spool {
  return {
    async write(stream, signal) {
      const chunks: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of stream) {
        signal.throwIfAborted();
        size += chunk.byteLength;
        if (size > limitBytes) {
          throw new Error(`Filtered file over ${limitBytes} bytes: too large to keep in memory on this DataMover`);
        }
        chunks.push(chunk);
      }
      async function* read() {
        yield* chunks;
      }
      return { size, read, dispose: async () => void chunks.splice(0) };
    },
  };
}
