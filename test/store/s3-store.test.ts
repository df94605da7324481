import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ObjectStore, StoredObjectMissing } from '../../core/store/ports.ts';
import { probeStore } from '../../core/store/probe.ts';
import { type S3StoreOptions, s3ObjectStore } from '../../functions/store/s3-store.ts';
import { type S3TestServer, startS3 } from '../support/servers/s3.ts';
import { chunks, md5, payload, stallingSource } from '../support/transfer.ts';

const MIB = 1024 * 1024;
let s3: S3TestServer;
beforeAll(async () => {
  s3 = await startS3('store-bucket');
});
afterAll(() => s3?.stop());
beforeEach(() => {
  s3.fault = () => undefined;
});

const never = () => new AbortController().signal;
const storeOn = (server: S3TestServer, options: Partial<S3StoreOptions> = {}) =>
  s3ObjectStore({
    bucket: server.bucket,
    prefix: 'objects',
    endpoint: server.url,
    region: 'us-east-1',
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, sessionToken: null },
    partSize: 5 * MIB,
    ...options,
  });
const store = (options: Partial<S3StoreOptions> = {}) => storeOn(s3, options);

async function bytesOf(stream: AsyncIterable<Uint8Array>) {
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk);
  return Buffer.concat(parts);
}

async function keysOf(objects: ObjectStore) {
  const keys: string[] = [];
  for await (const object of objects.list()) keys.push(object.key);
  return keys.sort();
}

const requestsSince = (from: number) => s3.requests.slice(from).map((r) => `${r.method} ${r.url}`);

describe('S3 store: writing and reading', () => {
  it('writes a small object in one PUT under the prefix, and reads it whole and by range', async () => {
    const bytes = payload(300_000);
    const from = s3.requests.length;
    await store().write('a/small.bin', chunks(bytes), never(), bytes.byteLength);
    expect(requestsSince(from)).toEqual(['PUT /store-bucket/objects/a/small.bin']);
    expect(md5((await s3.object('objects/a/small.bin'))!)).toBe(md5(bytes));

    const whole = await store().read('a/small.bin', never());
    expect(whole.size).toBe(300_000);
    expect(md5(await bytesOf(whole.stream))).toBe(md5(bytes));
    const part = await store().read('a/small.bin', never(), { start: 1000, end: 1999 });
    expect(part.size).toBe(300_000);
    expect(Buffer.compare(await bytesOf(part.stream), Buffer.from(bytes.subarray(1000, 2000)))).toBe(0);
  });

  it('writes an empty object, and one of unknown size below a part in one PUT', async () => {
    await store().write('empty', chunks(new Uint8Array(0)), never(), 0);
    expect((await store().read('empty', never())).size).toBe(0);
    const bytes = payload(70_000, 5);
    const from = s3.requests.length;
    await store().write('unsized', chunks(bytes), never());
    expect(requestsSince(from)).toEqual(['PUT /store-bucket/objects/unsized']);
    expect(md5(await bytesOf((await store().read('unsized', never())).stream))).toBe(md5(bytes));
  });

  it('writes a large object as a multipart upload of part-size parts, at most the given number in flight', async () => {
    const bytes = payload(23 * MIB, 11);
    const from = s3.requests.length;
    s3.maxPartsInFlight = 0;
    await store({ partsInFlight: 2 }).write('big.bin', chunks(bytes, 256 * 1024), never(), bytes.byteLength);
    const parts = s3.requests.slice(from).filter((r) => r.url.includes('partNumber='));
    expect(parts).toHaveLength(5);
    expect(s3.maxPartsInFlight).toBeLessThanOrEqual(2);
    expect(s3.pendingUploads()).toEqual([]);
    const read = await store().read('big.bin', never());
    expect(read.size).toBe(23 * MIB);
    expect(md5(await bytesOf(read.stream))).toBe(md5(bytes));
    const tail = await store().read('big.bin', never(), { start: 23 * MIB - 10, end: 23 * MIB - 1 });
    expect(Buffer.compare(await bytesOf(tail.stream), Buffer.from(bytes.subarray(23 * MIB - 10)))).toBe(0);
  });

  it('goes multipart for bytes of unknown size that fill more than a part', async () => {
    const bytes = payload(11 * MIB, 13);
    const from = s3.requests.length;
    await store().write('unsized-big', chunks(bytes), never());
    expect(requestsSince(from).filter((r) => r.includes('partNumber='))).toHaveLength(3);
    expect(md5(await bytesOf((await store().read('unsized-big', never())).stream))).toBe(md5(bytes));
  });

  it('an abort mid-write leaves no object and no multipart upload', async () => {
    const { source, release } = stallingSource(payload(12 * MIB, 17));
    const controller = new AbortController();
    const writing = store().write('aborted.bin', source, controller.signal, 40 * MIB);
    await new Promise((r) => setTimeout(r, 500));
    controller.abort(new Error('Retrieval interrupted'));
    await expect(writing).rejects.toThrow('Retrieval interrupted');
    release();
    expect(await s3.object('objects/aborted.bin')).toBeNull();
    expect(s3.aborted).toHaveLength(1);
    expect(s3.pendingUploads()).toEqual([]);
  });

  it('bytes other than the size announced fail the write and leave no object', async () => {
    const short = store().write('short.bin', chunks(payload(6 * MIB)), never(), 7 * MIB);
    await expect(short).rejects.toThrow(/6291456 bytes, not the 7340032 announced/);
    const long = store().write('long.bin', chunks(payload(1000)), never(), 999);
    await expect(long).rejects.toThrow(/more than the 999 bytes announced/);
    expect(await s3.object('objects/short.bin')).toBeNull();
    expect(await s3.object('objects/long.bin')).toBeNull();
    expect(s3.pendingUploads()).toEqual([]);
  });

  it('a part the server fails aborts the upload: nothing is left under the key', async () => {
    s3.fault = (req) => (req.url?.includes('partNumber=2') ? 'fail500' : undefined);
    const writing = store().write('failed.bin', chunks(payload(12 * MIB)), never(), 12 * MIB);
    await expect(writing).rejects.toThrow(/UploadPart 2 of failed.bin failed: 500 InternalError/);
    expect(await s3.object('objects/failed.bin')).toBeNull();
    expect(s3.pendingUploads()).toEqual([]);
  });

  it('reading an absent key rejects with StoredObjectMissing', async () => {
    const reading = store().read('never-written', never());
    await expect(reading).rejects.toBeInstanceOf(StoredObjectMissing);
    await expect(reading).rejects.toMatchObject({ key: 'never-written' });
  });

  it('refuses keys that URL parsing would resolve to another object', async () => {
    await expect(store().read('a/../b', never())).rejects.toThrow(/is no object key/);
  });
});

describe('S3 store: removing and listing', () => {
  it('removes objects in batches of at most 1000; absent keys are fine, twice is fine', async () => {
    const objects = store({ prefix: 'removing' });
    const keys = Array.from({ length: 1003 }, (_, i) => `r/${i}`);
    for (const key of keys.slice(0, 3)) await objects.write(key, chunks(payload(10)), never(), 10);
    const from = s3.requests.length;
    await objects.remove(keys);
    expect(requestsSince(from)).toEqual(['POST /store-bucket?delete', 'POST /store-bucket?delete']);
    expect(await keysOf(objects)).toEqual([]);
    await expect(objects.remove(keys.slice(0, 3))).resolves.toBeUndefined();
    await expect(objects.remove([])).resolves.toBeUndefined();
  });

  it('lists every object under the prefix, page after page, keys relative to it', async () => {
    const objects = store({ prefix: '/listing/', listPageSize: 2 });
    const others = store({ prefix: 'listing-not' });
    await others.write('x', chunks(payload(1)), never(), 1);
    for (const key of ['a', 'b/c', 'd', 'e f+g']) await objects.write(key, chunks(payload(5)), never(), 5);
    const from = s3.requests.length;
    const listed = [];
    for await (const object of objects.list()) listed.push(object);
    expect(listed.map((o) => o.key).sort()).toEqual(['a', 'b/c', 'd', 'e f+g']);
    expect(listed.every((o) => o.size === 5 && Date.now() - o.modifiedAt.getTime() < 60_000)).toBe(true);
    expect(requestsSince(from).length).toBeGreaterThanOrEqual(2);
    expect(await keysOf(others)).toEqual(['x']);
  });
});

describe('S3 store: errors and the probe', () => {
  it('names the store, the request and S3 code, never the secret, on wrong credentials', async () => {
    const secret = 'not-the-secret-0123456789';
    const wrong = store({ credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: secret, sessionToken: null } });
    expect(wrong.description).toBe(`s3://store-bucket/objects at ${s3.url}`);
    const error = await wrong.write('k', chunks(payload(10)), never(), 10).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain(`Store s3://store-bucket/objects at ${s3.url}: PutObject of k failed: 403`);
    expect(message).toContain('SignatureDoesNotMatch');
    expect(message).not.toContain(secret);
    await expect(wrong.read('k', never())).rejects.toThrow(/GetObject of k failed: 403 SignatureDoesNotMatch/);
  });

  it('a missing bucket is an error of the store, not a missing object', async () => {
    const reading = store({ bucket: 'no-such-bucket' }).read('k', never());
    await expect(reading).rejects.toThrow(/s3:\/\/no-such-bucket\/objects .* failed: 404 NoSuchBucket/);
  });

  it('probeStore writes, reads back and removes a probe object', async () => {
    const objects = store({ prefix: 'probed' });
    await expect(probeStore(objects)).resolves.toBeUndefined();
    expect(await keysOf(objects)).toEqual([]);
  });

  it('probeStore names the store and the step that failed', async () => {
    const stopped = await startS3('gone');
    const gone = storeOn(stopped);
    await stopped.stop();
    await expect(probeStore(gone)).rejects.toThrow(
      new RegExp(`^Store s3://gone/objects at ${stopped.url}: the probe's write failed: .*ECONNREFUSED`),
    );
    s3.fault = (req) => (req.method === 'GET' ? 'fail500' : undefined);
    await expect(probeStore(store({ prefix: 'probe-read' }))).rejects.toThrow(
      /the probe's read failed: .*GetObject of probe-[\w-]+ failed: 500 InternalError/,
    );
    s3.fault = () => undefined;
    expect(await keysOf(store({ prefix: 'probe-read' }))).toEqual([]);
  });
});

describe('S3 store: addressing', () => {
  const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'token' };
  it('virtual-hosted on AWS, the secret and token signed but never in the description', async () => {
    const seen: string[] = [];
    const fake: typeof fetch = async (input, init) => {
      seen.push(`${String(input)} ${new Headers(init?.headers).get('x-amz-security-token')}`);
      return new Response(null, { status: 404 });
    };
    const aws = s3ObjectStore({
      bucket: 'bkt',
      prefix: 'p/q',
      endpoint: null,
      region: 'eu-west-1',
      credentials,
      fetch: fake,
    });
    expect(aws.description).toBe('s3://bkt/p/q at https://s3.eu-west-1.amazonaws.com');
    await expect(aws.read('a b', never())).rejects.toBeInstanceOf(StoredObjectMissing);
    expect(seen).toEqual(['https://bkt.s3.eu-west-1.amazonaws.com/p/q/a%20b token']);
    const dotted = s3ObjectStore({
      bucket: 'my.bkt',
      prefix: '',
      endpoint: null,
      region: 'us-east-1',
      credentials,
      fetch: fake,
    });
    await dotted.read('k', never()).catch(() => undefined);
    expect(seen[1]).toBe('https://s3.us-east-1.amazonaws.com/my.bkt/k token');
  });

  it('path style under the endpoint and its path', async () => {
    const seen: string[] = [];
    const fake: typeof fetch = async (input) => {
      seen.push(String(input));
      return new Response(null, { status: 404 });
    };
    const gateway = 'https://gw.example.org/s3';
    const objects = s3ObjectStore({
      bucket: 'b',
      prefix: '',
      endpoint: gateway,
      region: 'x',
      credentials,
      fetch: fake,
    });
    expect(objects.description).toBe('s3://b at https://gw.example.org/s3');
    await objects.read('k/1', never()).catch(() => undefined);
    expect(seen).toEqual(['https://gw.example.org/s3/b/k/1']);
  });
});
