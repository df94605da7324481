import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { portableHashing } from '../../core/common/hashing.ts';
import { summing } from '../../core/retrieval/digests.ts';
import { parallelSumming } from '../../functions/node/parallel-sums.ts';
import { bytesOf } from '../support/transfer.ts';

/** The sums computed on worker threads are the sums of the bytes, whatever the chunks they come in. */
const MiB = 1024 * 1024;
const onThreads = parallelSumming({ minBytes: 0 });

async function* chunked(bytes: Buffer, sizes: number[]) {
  let at = 0;
  for (let i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length]!;
    yield bytes.subarray(at, at + size);
    at += size;
  }
}

const expected = (bytes: Buffer) => ({
  size: bytes.length,
  md5: createHash('md5').update(bytes).digest('hex'),
  sha512: createHash('sha512').update(bytes).digest('base64'),
});

describe('sums on worker threads', () => {
  it.each([
    ['empty', 0, [MiB]],
    ['one byte', 1, [MiB]],
    ['exactly the slots', 4 * MiB, [MiB]],
    ['odd chunks across slot boundaries', 5 * MiB + 7, [65_536 + 3, 999_999, 17]],
    ['chunks larger than a slot', 11 * MiB + 1, [3 * MiB + 5]],
  ])('%s: the bytes pass through unchanged, with their size, MD5 and SHA-512', async (_, size, sizes) => {
    const bytes = randomBytes(size);
    const summed = onThreads(chunked(bytes, sizes), size);
    expect((await bytesOf(summed.stream)).equals(bytes)).toBe(true);
    expect(await summed.sums()).toEqual(expected(bytes));
  });

  it('agrees with the in-thread sums, for files summed at once on the same threads', async () => {
    const files = Array.from({ length: 6 }, (_, i) => randomBytes(2 * MiB + i * 1000));
    const all = await Promise.all(
      files.map(async (bytes) => {
        const summed = onThreads(chunked(bytes, [300_000]), bytes.length);
        await bytesOf(summed.stream);
        return summed.sums();
      }),
    );
    for (const [i, bytes] of files.entries()) {
      const inThread = summing(chunked(bytes, [MiB]), portableHashing);
      await bytesOf(inThread.stream);
      expect(all[i]).toEqual(await inThread.sums());
    }
  });

  it('passes a failing source on, and the threads go on summing the next files', async () => {
    async function* failing() {
      yield randomBytes(3 * MiB);
      throw new Error('the source went away');
    }
    await expect(bytesOf(onThreads(failing(), 10 * MiB).stream)).rejects.toThrow('the source went away');
    const bytes = randomBytes(6 * MiB);
    const summed = onThreads(chunked(bytes, [MiB]), bytes.length);
    await bytesOf(summed.stream);
    expect(await summed.sums()).toEqual(expected(bytes));
  });

  it('a reader that stops early leaves nothing waiting, and the next file is summed right', async () => {
    const first = onThreads(chunked(randomBytes(8 * MiB), [MiB]), 8 * MiB);
    for await (const _ of first.stream) break;
    const bytes = randomBytes(5 * MiB);
    const summed = onThreads(chunked(bytes, [MiB]), bytes.length);
    await bytesOf(summed.stream);
    expect(await summed.sums()).toEqual(expected(bytes));
  });

  it('a process that summed files exits by itself once done, whatever its own flags', () => {
    const module = new URL('../../functions/node/parallel-sums.ts', import.meta.url).pathname;
    const script = `
      import { parallelSumming } from '${module}';
      const sum = parallelSumming({ minBytes: 0 });
      for (let i = 0; i < 3; i++) {
        const summed = sum((async function* () { yield new Uint8Array(5 << 20).fill(i); })(), 5 << 20);
        for await (const _ of summed.stream);
        console.log((await summed.sums()).md5);
      }`;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const expectedSums = [0, 1, 2].map((i) =>
      createHash('md5')
        .update(new Uint8Array(5 << 20).fill(i))
        .digest('hex'),
    );
    expect(run.stdout.trim().split('\n')).toEqual(expectedSums);
  });

  it('sums small files in place, with the same results', async () => {
    const bytes = randomBytes(100_000);
    const summed = parallelSumming()(chunked(bytes, [4096]), bytes.length);
    await bytesOf(summed.stream);
    expect(await summed.sums()).toEqual(expected(bytes));
  });
});

describe('sums in the thread that moves the bytes', () => {
  it('hashes each chunk once the next is asked for, so its reader can write it meanwhile', async () => {
    const bytes = randomBytes(3 * MiB + 5);
    const summed = summing(chunked(bytes, [MiB]), portableHashing);
    const parts: Buffer[] = [];
    for await (const chunk of summed.stream) parts.push(Buffer.from(chunk));
    expect(Buffer.concat(parts).equals(bytes)).toBe(true);
    expect(await summed.sums()).toEqual(expected(bytes));
  });

  it('refuses the sums of a stream not read to its end, whose last chunk is not hashed', async () => {
    const bytes = randomBytes(2 * MiB);
    const summed = summing(chunked(bytes, [MiB]), portableHashing);
    const reading = summed.stream[Symbol.asyncIterator]();
    await reading.next();
    await reading.next();
    await expect(summed.sums()).rejects.toThrow('not read to its end');
  });
});
