import { createHash, randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { portableHashing } from '../../core/common/hashing.ts';
import type { Delivered } from '../../core/dissemination/deliver.ts';
import type { OutgoingFile } from '../../core/dissemination/methods.ts';
import { memorySpool, sendSpooled } from '../../core/dissemination/spooled-filter.ts';
import { workerFilters } from '../../functions/workers/filters.ts';

/**
 * What a Worker filters with: gzip through CompressionStream (the same class in Node as in
 * workerd), and the spool in memory, with its limit, under sendSpooled's bookkeeping.
 */
const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');
const source = Buffer.concat([randomBytes(100_000), Buffer.alloc(400_000, 'analysis ')]);
async function* chunksOf(bytes: Buffer, size = 32 * 1024) {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}
async function collect(stream: AsyncIterable<Uint8Array>) {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe("a Worker's filters", () => {
  it('gzip decompresses to the source, and a reader that stops early closes the source', async () => {
    expect(md5(gunzipSync(await collect(workerFilters.gzip!(chunksOf(source)))))).toBe(md5(source));
    let closed = false;
    async function* watched() {
      try {
        yield* chunksOf(Buffer.concat([source, source, source]), 1024);
      } finally {
        closed = true;
      }
    }
    for await (const _ of workerFilters.gzip!(watched())) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toBe(true);
  });

  it('sends the spooled output under the extension, recording the source and the filtered bytes', async () => {
    let received: { file: OutgoingFile; bytes: Buffer } | undefined;
    const send = async (file: OutgoingFile, stream: AsyncIterable<Uint8Array>): Promise<Delivered> => {
      const bytes = await collect(stream);
      received = { file, bytes };
      return { sent: bytes.length, md5: md5(bytes) };
    };
    const file = { target: 'out/a.txt', size: source.length, filter: { name: 'gzip', transform: workerFilters.gzip! } };
    const signal = new AbortController().signal;
    const delivered = await sendSpooled(
      memorySpool(1024 * 1024),
      file,
      chunksOf(source),
      signal,
      send,
      portableHashing,
    );
    expect(received!.file).toMatchObject({ target: 'out/a.txt.gz', size: received!.bytes.length, filter: null });
    expect(md5(gunzipSync(received!.bytes))).toBe(md5(source));
    expect(delivered).toEqual({
      sent: received!.bytes.length,
      md5: md5(source),
      filter: { name: 'gzip', size: received!.bytes.length, md5: md5(received!.bytes) },
    });
  });

  it('fails a source that changed size, and output over the memory limit, sending nothing', async () => {
    let sends = 0;
    const send = async (): Promise<Delivered> => {
      sends++;
      return { sent: 0, md5: null };
    };
    const filter = { name: 'gzip', transform: workerFilters.gzip! };
    const signal = new AbortController().signal;
    const changed = { target: 'a', size: source.length + 1, filter };
    await expect(
      sendSpooled(memorySpool(1024 * 1024), changed, chunksOf(source), signal, send, portableHashing),
    ).rejects.toThrow(`Source changed size: ${source.length} bytes read, ${source.length + 1} registered`);
    const random = randomBytes(200_000);
    const big = { target: 'b', size: random.length, filter };
    await expect(
      sendSpooled(memorySpool(100_000), big, chunksOf(random), signal, send, portableHashing),
    ).rejects.toThrow('Filtered file over 100000 bytes: too large to keep in memory on this DataMover');
    expect(sends).toBe(0);
  });
});
