import net from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { HostConnection } from '../core/dissemination/methods.ts';
import { s3Method } from '../functions/transfer-methods/s3.ts';
import { s3Object, s3Settings } from '../functions/transfer-methods/s3-target.ts';
import { loopbackFetch } from './support/servers/loopback-fetch.ts';
import { type S3TestServer, startS3 } from './support/servers/s3.ts';
import { scaled } from './support/time.ts';
import { abortMidway, chunks, hostFor, md5, payload, stallingSource } from './support/transfer.ts';

const MIB = 1024 * 1024;
let s3: S3TestServer;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(() => s3?.stop());
beforeEach(() => {
  s3.fault = () => undefined;
});

const never = () => new AbortController().signal;
const host = (options: Record<string, string | number> = {}, over: Partial<Parameters<typeof hostFor>[1]> = {}) =>
  hostFor(
    's3',
    { login: s3.accessKeyId, password: s3.secretAccessKey, directory: 'incoming', ...over },
    { 's3.url': s3.url, 's3.bucketName': s3.bucket, 's3.enablePathStyleAccess': 'yes', ...options },
  );
const send = (h: HostConnection, target: string, bytes: Uint8Array, signal = never(), size = bytes.byteLength) =>
  s3Method().send(h, { target, size }, chunks(bytes), signal);
const uploadIds = () => s3.requests.filter((r) => r.url.includes('?uploads')).length;

describe('s3: where an object goes', () => {
  const settings = s3Settings(new Map());
  const at = (h: HostConnection, target: string) =>
    s3Object(h, { target, size: 1 }, s3Settings(h.options.raw)).url.href;

  it('AWS in the region, virtual-hosted, when neither s3.url nor a host name is given', () => {
    const h = hostFor('s3', { directory: 'data' }, { 's3.bucketName': 'bkt', 's3.region': 'eu-west-1' });
    expect(at(h, 'a b/c+d.grib')).toBe('https://bkt.s3.eu-west-1.amazonaws.com/data/a%20b/c%2Bd.grib');
  });

  it('the host name with s3.scheme and the port; path style for an IP address or a dotted bucket', () => {
    const named = hostFor('s3', { hostname: 'minio.example.org:9000', directory: 'bkt/d' }, { 's3.scheme': 'http' });
    expect(at(named, 'f')).toBe('http://bkt.minio.example.org:9000/d/f');
    expect(at(hostFor('s3', { hostname: '10.0.0.1', directory: 'b' }), 'f')).toBe('https://10.0.0.1/b/f');
    expect(at(hostFor('s3', { hostname: 's3.example.org', directory: 'my.bucket' }), 'f')).toBe(
      'https://s3.example.org/my.bucket/f',
    );
  });

  it('s3.url wins, under its path; the prefix goes before the key', () => {
    const h = hostFor(
      's3',
      { hostname: 'ignored', directory: 'in' },
      {
        's3.url': 'https://gw.example.org/s3/',
        's3.bucketName': 'b',
        's3.prefix': 'p/',
        's3.enablePathStyleAccess': 1,
      },
    );
    expect(at(h, 'x')).toBe('https://gw.example.org/s3/b/p/in/x');
  });

  it('refuses a path with no bucket in it', () => {
    expect(() => s3Object(hostFor('s3', {}), { target: 'lonely', size: 1 }, settings)).toThrow(/No S3 bucket/);
  });
});

describe('s3: sending to s3rver', () => {
  it('puts the bytes whole and answers their size and MD5', async () => {
    const bytes = payload(300_000);
    await expect(send(host(), 'products/a.grib', bytes)).resolves.toEqual({ sent: 300_000, md5: md5(bytes) });
    expect(md5((await s3.object('incoming/products/a.grib'))!)).toBe(md5(bytes));
  });

  it('takes the bucket from the first directory, and puts the prefix before the key', async () => {
    const bytes = payload(10_000, 3);
    const h = host({ 's3.bucketName': '', 's3.prefix': 'pre/' }, { directory: `${s3.bucket}/in` });
    await send(h, 'f.bin', bytes);
    expect(md5((await s3.object('pre/in/f.bin'))!)).toBe(md5(bytes));
  });

  it('sends an empty file', async () => {
    await expect(send(host(), 'empty', new Uint8Array(0))).resolves.toEqual({ sent: 0, md5: md5(new Uint8Array()) });
    expect((await s3.object('incoming/empty'))?.length).toBe(0);
  });

  it('reaches the bucket virtual-hosted (bucket.s3.localhost) by default', async () => {
    const bytes = payload(20_000, 5);
    const h = host({ 's3.url': `http://s3.localhost:${s3.port}`, 's3.enablePathStyleAccess': 'no' });
    await s3Method({ fetch: loopbackFetch(s3.port) }).send(
      h,
      { target: 'v.bin', size: 20_000 },
      chunks(bytes),
      never(),
    );
    expect(s3.requests.at(-1)).toMatchObject({ method: 'PUT', host: `${s3.bucket}.s3.localhost:${s3.port}` });
    expect(s3.requests.at(-1)!.url).toBe('/incoming/v.bin');
    expect(md5((await s3.object('incoming/v.bin'))!)).toBe(md5(bytes));
  });

  it('forms the endpoint from the host name, port and s3.scheme', async () => {
    const bytes = payload(1000);
    const h = hostFor(
      's3',
      { hostname: `127.0.0.1:${s3.port}`, login: 'S3RVER', password: 'S3RVER', directory: s3.bucket },
      { 's3.scheme': 'http' },
    );
    await send(h, 'by-host', bytes);
    expect(md5((await s3.object('by-host'))!)).toBe(md5(bytes));
  });

  it('goes multipart from s3.multipartSize, in parts of s3.partSize, and gives the same bytes', async () => {
    const bytes = payload(12 * MIB + 12_345, 11);
    const before = s3.requests.length;
    const h = host({ 's3.multipartSize': 5 * MIB, 's3.partSize': 5 * MIB, 's3.numUploadThreads': 2 });
    await expect(send(h, 'big.bin', bytes)).resolves.toEqual({ sent: bytes.byteLength, md5: md5(bytes) });
    const made = s3.requests.slice(before).map((r) => `${r.method} ${r.url.replace(/uploadId=\w+/, 'uploadId=U')}`);
    expect(made).toEqual([
      'POST /test-bucket/incoming/big.bin?uploads',
      expect.stringMatching(/^PUT .*partNumber=[12]&uploadId=U$/),
      expect.stringMatching(/^PUT .*partNumber=[12]&uploadId=U$/),
      'PUT /test-bucket/incoming/big.bin?partNumber=3&uploadId=U',
      'POST /test-bucket/incoming/big.bin?uploadId=U',
    ]);
    expect(md5((await s3.object('incoming/big.bin'))!)).toBe(md5(bytes));
    expect(s3.pendingUploads()).toEqual([]);
  });

  it('keeps at most s3.numUploadThreads parts in flight', async () => {
    for (const threads of [1, 3]) {
      s3.maxPartsInFlight = 0;
      const h = host({ 's3.multipartSize': 5 * MIB, 's3.partSize': 5 * MIB, 's3.numUploadThreads': threads });
      await send(h, `threads-${threads}`, payload(20 * MIB, threads));
      expect(s3.maxPartsInFlight).toBe(threads);
    }
  });

  it('never makes parts under the 5 MiB S3 takes (the test server refuses them as S3 does)', async () => {
    const bytes = payload(6 * MIB, 13);
    const h = host({ 's3.multipartSize': MIB, 's3.partSize': MIB });
    await send(h, 'small-parts.bin', bytes);
    expect(md5((await s3.object('incoming/small-parts.bin'))!)).toBe(md5(bytes));
    expect(s3.requests.filter((r) => r.url.includes('small-parts.bin?partNumber')).length).toBe(2);
  });
});

describe('s3: failures', () => {
  it('a wrong secret fails with the status and the S3 code, never the secret', async () => {
    const secret = 'not-the-Secret-123';
    const error = await send(host({}, { password: secret }), 'denied', payload(100)).catch((e: Error) => e);
    expect(String(error)).toMatch(/S3 PUT test-bucket\/incoming\/denied failed: 403 SignatureDoesNotMatch/);
    expect(String(error)).not.toContain(secret);
    expect(await s3.object('incoming/denied')).toBeNull();
  });

  it('an unknown access key fails as S3 says', async () => {
    const h = host({ 's3.multipartSize': 1 }, { login: 'NOBODY' });
    await expect(send(h, 'denied', payload(100))).rejects.toThrow(
      /S3 CreateMultipartUpload test-bucket\/incoming\/denied failed: 403 InvalidAccessKeyId/,
    );
  });

  it('a source shorter or longer than registered fails and leaves no object', async () => {
    await expect(send(host(), 'short', payload(1000), never(), 1500)).rejects.toThrow(
      'Source changed size: 1000 bytes read, 1500 registered',
    );
    await expect(send(host(), 'long', payload(1000), never(), 999)).rejects.toThrow(
      'Source changed size: more than 999 bytes read, 999 registered',
    );
    // Exactly the registered size, then more: the server must not see a complete body either.
    await expect(send(host(), 'long2', payload(128 * 1024), never(), 64 * 1024)).rejects.toThrow(/more than 65536/);
    for (const key of ['short', 'long', 'long2']) expect(await s3.object(`incoming/${key}`)).toBeNull();
  });

  it('a multipart source that changed size is aborted, with no object and no upload left', async () => {
    const h = host({ 's3.multipartSize': 5 * MIB, 's3.partSize': 5 * MIB });
    await expect(send(h, 'mp-short', payload(11 * MIB), never(), 12 * MIB)).rejects.toThrow(/Source changed size/);
    expect(await s3.object('incoming/mp-short')).toBeNull();
    expect(s3.aborted.length).toBeGreaterThan(0);
    expect(s3.pendingUploads()).toEqual([]);
  });

  it('an abort in the middle of a PUT rejects at once and leaves no object', async () => {
    await abortMidway((source, signal) => s3Method().send(host(), { target: 'cut', size: 1_000_000 }, source, signal));
    expect(s3.requests.at(-1)).toMatchObject({ method: 'PUT', incomplete: true });
    expect(await s3.object('incoming/cut')).toBeNull();
  });

  it('an abort during a multipart upload aborts the upload', async () => {
    const first = payload(6 * MIB);
    const { source, release } = stallingSource(first);
    const controller = new AbortController();
    const h = host({ 's3.multipartSize': 5 * MIB, 's3.partSize': 5 * MIB });
    const sending = s3Method().send(h, { target: 'mp-cut', size: 20 * MIB }, source, controller.signal);
    const aborted = s3.aborted.length;
    await waitFor(() => s3.requests.some((r) => r.url.includes('mp-cut?partNumber=1')));
    controller.abort(new Error('Transfer interrupted'));
    await expect(sending).rejects.toThrow('Transfer interrupted');
    release();
    expect(s3.aborted.length).toBe(aborted + 1);
    expect(s3.pendingUploads()).toEqual([]);
    expect(await s3.object('incoming/mp-cut')).toBeNull();
  });

  it('a 500 on part 2 fails the send, names the part and aborts the upload', async () => {
    s3.fault = (req) => (req.url?.includes('partNumber=2') ? 'fail500' : undefined);
    const h = host({ 's3.multipartSize': 5 * MIB, 's3.partSize': 5 * MIB, 's3.numUploadThreads': 1 });
    const uploads = uploadIds();
    await expect(send(h, 'mp-500', payload(16 * MIB))).rejects.toThrow(
      /S3 UploadPart 2 test-bucket\/incoming\/mp-500 failed: 500 InternalError We encountered an internal error/,
    );
    expect(uploadIds()).toBe(uploads + 1);
    expect(s3.pendingUploads()).toEqual([]);
    expect(await s3.object('incoming/mp-500')).toBeNull();
  });

  it('an ETag that is not the MD5 sent fails the PUT and removes the object', async () => {
    s3.fault = (req) => (req.method === 'PUT' ? 'wrongEtag' : undefined);
    await expect(send(host(), 'corrupt', payload(1000))).rejects.toThrow(
      /S3 PUT test-bucket\/incoming\/corrupt failed: ETag 0123456789abcdef\w+ is not the MD5 \w+ of the bytes/,
    );
    expect(await s3.object('incoming/corrupt')).toBeNull();
  });

  it('a part whose ETag is not its MD5 fails the upload, which is aborted', async () => {
    s3.fault = (req) => (req.url?.includes('partNumber=1') ? 'wrongEtag' : undefined);
    const h = host({ 's3.multipartSize': 5 * MIB, 's3.partSize': 5 * MIB });
    await expect(send(h, 'mp-corrupt', payload(6 * MIB))).rejects.toThrow(
      /S3 UploadPart 1 .* is not the MD5 of the part/,
    );
    expect(s3.pendingUploads()).toEqual([]);
  });

  it('a server that never answers is left when the signal aborts', async () => {
    s3.fault = () => 'stall';
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('Transfer timed out')), 300);
    await expect(send(host(), 'stalled', payload(1000), controller.signal)).rejects.toThrow('Transfer timed out');
  });

  it('ectrans.putTimeOut bounds the whole send, multipart uploads included, which are aborted', async () => {
    s3.fault = () => 'stall';
    await expect(send(host({ 'ectrans.putTimeOut': '300ms' }), 'slow', payload(1000))).rejects.toThrow(
      'Transfer timed out after 0.3 s (ectrans.putTimeOut)',
    );
    s3.fault = (req) => (req.url?.includes('partNumber=2') ? 'stall' : undefined);
    const aborted = s3.aborted.length;
    const h = host({ 'ectrans.putTimeOut': '1s', 's3.multipartSize': 5 * MIB, 's3.partSize': 5 * MIB });
    await expect(send(h, 'slow-mp', payload(12 * MIB))).rejects.toThrow('Transfer timed out after 1 s');
    expect(s3.aborted.length).toBe(aborted + 1);
    expect(s3.pendingUploads()).toEqual([]);
  });

  it('a refused connection says so', async () => {
    const h = host({ 's3.url': `http://127.0.0.1:${await closedPort()}` });
    await expect(send(h, 'x', payload(10))).rejects.toThrow(/S3 PUT test-bucket\/incoming\/x failed: .*ECONNREFUSED/);
  });
});

async function waitFor(condition: () => boolean, ms = 10_000) {
  const until = Date.now() + scaled(ms);
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A port nothing listens on (one just released). */
async function closedPort() {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}
