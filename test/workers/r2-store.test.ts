import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { type ObjectStore, StoredObjectMissing } from '../../core/store/ports.ts';
import { type R2StoreBucket, r2ObjectStore } from '../../functions/workers/r2-store.ts';
import { storeOf, type WorkerEnv, workerConfig } from '../../functions/workers/runtime.ts';

/** The R2 store on Miniflare's local R2, in workerd: each test under a prefix of its own. */
const MIB = 1024 * 1024;
const bucket = (env as unknown as { ECPDS_STORE: R2Bucket }).ECPDS_STORE;
let run = 0;
const prefixOf = (name: string) => `t${Date.now().toString(36)}-${run++}/${name}`;
const storeUnder = (prefix: string, options: { partSize?: number; listPageSize?: number } = {}) =>
  r2ObjectStore(bucket, { prefix, description: `R2 binding ECPDS_STORE/${prefix}`, ...options });

/** `size` bytes, byte i being (31 i + seed) mod 256. */
function pattern(size: number, seed = 1): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (31 * i + seed) & 255;
  return bytes;
}

/** The bytes in chunks of an odd size, so that they straddle part boundaries. */
async function* chunked(bytes: Uint8Array, chunk = MIB + 7): AsyncIterable<Uint8Array> {
  for (let i = 0; i < bytes.length; i += chunk) yield bytes.slice(i, i + chunk);
}

/** The bytes' SHA-256, in hex: large arrays compared element by element exhaust the test runner. */
async function digest(bytes: Uint8Array): Promise<string> {
  const sum = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(sum, (b) => b.toString(16).padStart(2, '0')).join('');
}

async function collect(stream: AsyncIterable<Uint8Array>): Promise<string> {
  const parts: Uint8Array[] = [];
  for await (const part of stream) parts.push(part);
  const whole = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.byteLength;
  }
  return digest(whole);
}

const live = () => new AbortController().signal;
const readAll = async (store: ObjectStore, key: string, range?: { start: number; end: number }) => {
  const read = await store.read(key, live(), range);
  return { size: read.size, sha: await collect(read.stream) };
};
const listed = async (store: ObjectStore) => {
  const keys: Array<{ key: string; size: number }> = [];
  for await (const object of store.list()) {
    expect(object.modifiedAt).toBeInstanceOf(Date);
    keys.push({ key: object.key, size: object.size });
  }
  return keys.sort((a, b) => a.key.localeCompare(b.key));
};
const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('resolved');
    },
    (e: unknown) => e as Error,
  );

describe('the R2 store', () => {
  it('writes an object in one put and reads it whole or by range, the size always the whole', async () => {
    const prefix = prefixOf('small');
    const store = storeUnder(prefix);
    const bytes = pattern(300_000);
    await store.write('a/one.bin', chunked(bytes, 65_537), live(), bytes.length);
    expect((await bucket.head(`${prefix}/a/one.bin`))?.size).toBe(300_000);

    expect(await readAll(store, 'a/one.bin')).toEqual({ size: 300_000, sha: await digest(bytes) });
    expect(await readAll(store, 'a/one.bin', { start: 10, end: 99 })).toEqual({
      size: 300_000,
      sha: await digest(bytes.slice(10, 100)),
    });
    expect(await readAll(store, 'a/one.bin', { start: 299_999, end: 299_999 })).toEqual({
      size: 300_000,
      sha: await digest(bytes.slice(299_999)),
    });
    // A range reaching past the end ends with the object.
    expect(await readAll(store, 'a/one.bin', { start: 299_990, end: 400_000 })).toEqual({
      size: 300_000,
      sha: await digest(bytes.slice(299_990)),
    });
    // A range past the end: the size now and no bytes, for the caller to see the object is shorter.
    expect(await readAll(store, 'a/one.bin', { start: 300_000, end: 300_100 })).toEqual({
      size: 300_000,
      sha: await digest(new Uint8Array(0)),
    });
  });

  it('writes an empty object, and one of an unknown size', async () => {
    const store = storeUnder(prefixOf('sizes'));
    await store.write('empty', chunked(new Uint8Array(0)), live(), 0);
    expect(await readAll(store, 'empty')).toEqual({ size: 0, sha: await digest(new Uint8Array(0)) });
    const bytes = pattern(100_000, 3);
    await store.write('unsized', chunked(bytes, 4096), live());
    expect(await readAll(store, 'unsized')).toEqual({ size: 100_000, sha: await digest(bytes) });
  });

  it('uploads a larger object in parts, whether its size is known or not', async () => {
    const prefix = prefixOf('parts');
    const store = storeUnder(prefix, { partSize: 5 * MIB });
    const bytes = pattern(11 * MIB + 5, 7);
    await store.write('sized.bin', chunked(bytes), live(), bytes.length);
    await store.write('unsized.bin', chunked(bytes), live());
    for (const key of ['sized.bin', 'unsized.bin']) {
      // A multipart object's ETag ends with its number of parts: 5 MiB, 5 MiB and the rest.
      expect((await bucket.head(`${prefix}/${key}`))?.etag).toMatch(/-3$/);
      expect(await readAll(store, key)).toEqual({ size: bytes.length, sha: await digest(bytes) });
    }
    expect(await readAll(store, 'sized.bin', { start: 5 * MIB - 3, end: 5 * MIB + 2 })).toEqual({
      size: bytes.length,
      sha: await digest(bytes.slice(5 * MIB - 3, 5 * MIB + 3)),
    });
  });

  it('leaves nothing under the key when a write is aborted, in one put or in parts', async () => {
    const prefix = prefixOf('aborted');
    const store = storeUnder(prefix, { partSize: 5 * MIB });
    for (const [key, size] of [
      ['one.bin', 3 * MIB],
      ['parts.bin', 11 * MIB],
      ['unsized.bin', undefined],
    ] as const) {
      const abort = new AbortController();
      const reason = new Error(`stopped ${key}`);
      // A source that gives 7 MiB (past a first part), then waits: the abort must not wait for it.
      async function* stalling() {
        yield* chunked(pattern(Math.min(7 * MIB, (size ?? 11 * MIB) - 1)));
        setTimeout(() => abort.abort(reason), 50);
        await new Promise(() => undefined);
      }
      await expect(store.write(key, stalling(), abort.signal, size)).rejects.toBe(reason);
      expect(await bucket.head(`${prefix}/${key}`)).toBeNull();
      await expect(store.read(key, live())).rejects.toBeInstanceOf(StoredObjectMissing);
    }
    expect(await listed(store)).toEqual([]);
  });

  it('leaves nothing when the source fails, ends short or goes on past the size announced', async () => {
    const prefix = prefixOf('faulty');
    const store = storeUnder(prefix, { partSize: 5 * MIB });
    async function* failing() {
      yield* chunked(pattern(6 * MIB));
      throw new Error('source connection reset');
    }
    await expect(store.write('failed.bin', failing(), live(), 11 * MIB)).rejects.toThrow('source connection reset');
    await expect(store.write('failed-unsized.bin', failing(), live())).rejects.toThrow('source connection reset');
    for (const [key, size, wrote] of [
      ['short.bin', 1000, 999],
      ['short-parts.bin', 11 * MIB, 11 * MIB - 1],
    ] as const) {
      const error = await rejection(store.write(key, chunked(pattern(wrote)), live(), size));
      expect(error.message).toBe(
        `Stored object ${key} not written: the bytes ended after ${wrote}, ${size} bytes announced`,
      );
    }
    for (const [key, size] of [
      ['long.bin', 1000],
      ['long-parts.bin', 11 * MIB],
      ['long-empty.bin', 0],
    ] as const) {
      const error = await rejection(store.write(key, chunked(pattern(size + 1)), live(), size));
      expect(error.message).toBe(
        `Stored object ${key} not written: the bytes went on past them, ${size} bytes announced`,
      );
    }
    expect(await listed(store)).toEqual([]);
  });

  it('answers StoredObjectMissing for an object it does not have, whole or by range', async () => {
    const store = storeUnder(prefixOf('missing'));
    for (const range of [undefined, { start: 0, end: 9 }, { start: 100, end: 200 }]) {
      const error = await rejection(store.read('nowhere.bin', live(), range));
      expect(error).toBeInstanceOf(StoredObjectMissing);
      expect(error.message).toBe('Stored object nowhere.bin not found');
      expect((error as StoredObjectMissing).key).toBe('nowhere.bin');
    }
  });

  it('removes objects in batches of at most 1000 keys, those already gone being no error', async () => {
    const prefix = prefixOf('remove');
    const batches: number[] = [];
    // The real bucket, with its deletes counted: R2 takes 1000 keys per delete at most.
    const counted: R2StoreBucket = {
      delete: (keys: string | string[]) => {
        batches.push(Array.isArray(keys) ? keys.length : 1);
        return bucket.delete(keys);
      },
      put: bucket.put.bind(bucket),
      get: bucket.get.bind(bucket),
      head: bucket.head.bind(bucket),
      list: bucket.list.bind(bucket),
      createMultipartUpload: bucket.createMultipartUpload.bind(bucket),
    };
    const store = r2ObjectStore(counted, { prefix, description: 'counted' });
    const keys = Array.from({ length: 1001 }, (_, i) => `k${i}`);
    for (let i = 0; i < keys.length; i += 100) {
      await Promise.all(keys.slice(i, i + 100).map((key) => bucket.put(`${prefix}/${key}`, key)));
    }
    const other = storeUnder(`${prefix}x`);
    await other.write('k0', chunked(pattern(3)), live(), 3);

    await store.remove([...keys, 'never-written']);
    expect(batches).toEqual([1000, 2]);
    expect(await listed(store)).toEqual([]);
    await store.remove(['k0', 'k1']);
    await store.remove([]);
    expect(batches).toEqual([1000, 2, 2]);
    // The same key under another prefix is another object.
    expect(await listed(other)).toEqual([{ key: 'k0', size: 3 }]);
  });

  it('lists the objects under its prefix only, page after page, keys relative to the prefix', async () => {
    const prefix = prefixOf('list');
    const store = storeUnder(prefix, { listPageSize: 2 });
    for (const [i, key] of ['a', 'b/c', 'b/d', 'e', 'f/g/h'].entries()) {
      await store.write(key, chunked(pattern(i + 1)), live(), i + 1);
    }
    // `<prefix>0/…` shares the prefix's first characters, not its folder.
    await storeUnder(`${prefix}0`).write('z', chunked(pattern(9)), live(), 9);
    expect(await listed(store)).toEqual([
      { key: 'a', size: 1 },
      { key: 'b/c', size: 2 },
      { key: 'b/d', size: 3 },
      { key: 'e', size: 4 },
      { key: 'f/g/h', size: 5 },
    ]);
  });
});

describe('the store of the Worker', () => {
  const configured = (vars: Record<string, string>) => {
    const worker = { ...(env as unknown as WorkerEnv), ...vars } as WorkerEnv;
    return storeOf(workerConfig(worker), worker);
  };

  it('is the R2 bucket named by ECPDS_STORE_BINDING, under ECPDS_STORE_PREFIX', async () => {
    expect(configured({})).toBeNull();
    const store = configured({ ECPDS_STORE_BINDING: 'ECPDS_STORE', ECPDS_STORE_PREFIX: `/${prefixOf('config')}/` });
    expect(store?.description).toMatch(/^R2 binding ECPDS_STORE\/t[\w-]+\/config$/);
    await store?.write('x', chunked(pattern(5)), live(), 5);
    const prefix = store?.description.replace('R2 binding ECPDS_STORE/', '');
    expect((await bucket.head(`${prefix}/x`))?.size).toBe(5);
    expect(configured({ ECPDS_STORE_BINDING: 'ECPDS_STORE' })?.description).toBe('R2 binding ECPDS_STORE');
  });

  it('is refused with the reason when the binding is not an R2 bucket bound to the Worker', () => {
    expect(() => configured({ ECPDS_STORE_BINDING: 'NOT_BOUND' })).toThrow(
      'ECPDS_STORE_BINDING: NOT_BOUND is not an R2 bucket bound to this Worker',
    );
    expect(() => configured({ ECPDS_STORE_BINDING: 'HYPERDRIVE' })).toThrow(
      'ECPDS_STORE_BINDING: HYPERDRIVE is not an R2 bucket bound to this Worker',
    );
    expect(() => configured({ ECPDS_STORE_BINDING: 'ecpds-store' })).toThrow(
      "ECPDS_STORE_BINDING must name a binding (an identifier), got 'ecpds-store'",
    );
  });
});
