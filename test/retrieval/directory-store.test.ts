import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ObjectStore, StoredObjectMissing } from '../../core/store/ports.ts';
import { directoryStore } from '../../functions/store/directory-store.ts';

/** The directory store's promises: a key holds a whole object or nothing, and ranges read what they name. */
let root: string;
let store: ObjectStore;
beforeAll(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-dir-store-')));
  store = directoryStore(root);
});
afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

const live = () => new AbortController().signal;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
async function collect(stream: AsyncIterable<Uint8Array>) {
  const parts: Buffer[] = [];
  for await (const p of stream) parts.push(Buffer.from(p));
  return Buffer.concat(parts);
}
async function* chunked(bytes: Buffer, size: number) {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}
const filesUnder = (dir: string): string[] =>
  fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));
const listed = async () => {
  const keys: string[] = [];
  for await (const o of store.list()) keys.push(o.key);
  return keys.sort();
};

describe('the directory store', () => {
  it('a write aborted midway leaves nothing under the key, nor a partial file', async () => {
    const controller = new AbortController();
    let sent = 0;
    async function* halfThenAbort() {
      for (let i = 0; i < 10; i++) {
        sent++;
        if (i === 5) controller.abort(new Error('stopped'));
        yield randomBytes(64 * 1024);
      }
    }
    await expect(store.write('1/1-0-1', halfThenAbort(), controller.signal, 640 * 1024)).rejects.toThrow();
    expect(sent).toBeGreaterThan(1);
    await expect(store.read('1/1-0-1', live())).rejects.toBeInstanceOf(StoredObjectMissing);
    expect(filesUnder(root)).toEqual([]);
    expect(await listed()).toEqual([]);
  });

  it('a write waiting on a stalled source ends when aborted, leaving nothing', async () => {
    const controller = new AbortController();
    // A network stream that sends a little, then nothing.
    const stalls = new Readable({ read() {} });
    stalls.push(randomBytes(64 * 1024));
    const writing = store.write('1/1-0-9', stalls, controller.signal, 640 * 1024);
    setTimeout(() => controller.abort(new Error('stopped')), 100);
    await expect(writing).rejects.toThrow();
    expect(filesUnder(root)).toEqual([]);
    // Closing the source is its opener's part (retrieve() destroys it).
    stalls.destroy();
  });

  it('writes an object larger than its flushes whole, byte for byte', async () => {
    const bytes = randomBytes(70 * 1024 * 1024 + 3);
    async function* chunks() {
      for (let at = 0; at < bytes.length; at += 1 << 20) yield bytes.subarray(at, at + (1 << 20));
    }
    await store.write('1/1-0-10', chunks(), live(), bytes.length);
    expect(fs.readFileSync(path.join(root, '1/1-0-10')).equals(bytes)).toBe(true);
    await store.remove(['1/1-0-10']);
  });

  it('holds no more of a large object in memory than a few of its chunks while writing it', async () => {
    const MIB = 1024 * 1024;
    const chunks = 384;
    let most = 0;
    async function* fresh() {
      for (let i = 0; i < chunks; i++) {
        most = Math.max(most, process.memoryUsage().arrayBuffers);
        yield Buffer.alloc(MIB, i);
      }
    }
    const before = process.memoryUsage().arrayBuffers;
    await store.write('held/big', fresh(), live(), chunks * MIB);
    expect(fs.statSync(path.join(root, 'held/big')).size).toBe(chunks * MIB);
    // Before, each chunk stayed referenced until the write's end: the whole object in memory at once.
    expect((most - before) / MIB).toBeLessThan(chunks / 3);
    await store.remove(['held/big']);
  });

  it.each([
    ['its size', 0],
    ['fewer bytes than it holds', -1],
    ['more bytes than it holds', 1],
    ['no size', null],
  ])('writes an object told %s whole (synced once the size is in, again if more comes)', async (_, off) => {
    const bytes = randomBytes(3 * 65_536 + 11);
    const key = `sized/${off}`;
    await store.write(key, chunked(bytes, 65_536), live(), off === null ? undefined : bytes.length + off);
    const { size, stream } = await store.read(key, live());
    expect(size).toBe(bytes.length);
    expect(sha(await collect(stream))).toBe(sha(bytes));
    await store.remove([key]);
  });

  it('a write whose bytes fail midway leaves nothing either', async () => {
    async function* failing() {
      yield randomBytes(100_000);
      throw new Error('source gone');
    }
    await expect(store.write('1/1-0-2', failing(), live())).rejects.toThrow('source gone');
    await expect(store.read('1/1-0-2', live())).rejects.toBeInstanceOf(StoredObjectMissing);
    expect(filesUnder(root)).toEqual([]);
  });

  it('an object in the making is not listed: a sweep never sees it', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started: () => void = () => undefined;
    const begun = new Promise<void>((resolve) => {
      started = resolve;
    });
    async function* slow() {
      yield randomBytes(1000);
      started();
      await held;
      yield randomBytes(1000);
    }
    const writing = store.write('2/2-0-1', slow(), live());
    await begun;
    while (filesUnder(root).length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await listed()).toEqual([]);
    release();
    await writing;
    expect(await listed()).toEqual(['2/2-0-1']);
    await store.remove(['2/2-0-1']);
  });

  it('reads an object whole or by range (both ends included), its size always the whole', async () => {
    const bytes = randomBytes(300_000);
    await store.write('3/3-0-1', chunked(bytes, 65_537), live(), bytes.length);
    const whole = await store.read('3/3-0-1', live());
    expect(whole.size).toBe(300_000);
    expect(sha(await collect(whole.stream))).toBe(sha(bytes));
    for (const [start, end] of [
      [0, 0],
      [10, 99],
      [65_530, 200_000],
      [299_999, 299_999],
    ] as const) {
      const part = await store.read('3/3-0-1', live(), { start, end });
      expect(part.size).toBe(300_000);
      expect(sha(await collect(part.stream))).toBe(sha(bytes.subarray(start, end + 1)));
    }
    expect(await listed()).toEqual(['3/3-0-1']);
  });

  it('removes objects, absent ones included, and refuses keys outside its directory', async () => {
    await store.remove(['3/3-0-1', 'never/there']);
    await expect(store.read('3/3-0-1', live())).rejects.toBeInstanceOf(StoredObjectMissing);
    await expect(store.write('../escape', chunked(randomBytes(10), 10), live())).rejects.toThrow('Invalid object key');
    expect(fs.existsSync(path.join(path.dirname(root), 'escape'))).toBe(false);
  });
});
