import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { HostConnection } from '../../core/dissemination/methods.ts';
import { s3Method } from '../../functions/transfer-methods/s3.ts';
import { listedObjects } from '../../functions/transfer-methods/s3-wire.ts';
import { loopbackFetch } from '../support/servers/loopback-fetch.ts';
import { type S3TestServer, startS3 } from '../support/servers/s3.ts';
import { scaled } from '../support/time.ts';
import { bytesOf, chunks, hostFor, payload } from '../support/transfer.ts';
import { byName, listsPrefix, live, putListed, waitFor } from './support.ts';

/** An Acquisition host's "directory" listed with ListObjectsV2, against s3rver behind the test front. */
let s3: S3TestServer;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(() => s3?.stop());
beforeEach(() => {
  s3.fault = () => undefined;
});

/** The host as an acquisition lists it: path style on the test server, no directory of its own. */
const host = (options: Record<string, string> = {}, over: Parameters<typeof hostFor>[1] = {}) =>
  hostFor(
    's3',
    { login: s3.accessKeyId, password: s3.secretAccessKey, ...over },
    { 's3.url': s3.url, 's3.bucketName': s3.bucket, 's3.enablePathStyleAccess': 'yes', ...options },
  );
const put = (key: string, bytes: Uint8Array) =>
  s3Method().send(host(), { target: key, size: bytes.byteLength }, chunks(bytes), live());
const listRequests = () => s3.requests.filter((r) => r.url.includes('list-type=2'));

describe('s3: listing a prefix', () => {
  let putting: { before: number; after: number };
  beforeAll(async () => {
    putting = await putListed(put);
    await put('pre/list/p.bin', payload(77, 3));
  });

  it('objects directly under the prefix are files with their size and time; common prefixes, directories', async () => {
    // S3 keeps the time to the second on some services, to the millisecond on others.
    await listsPrefix((directory) => s3Method().list!(host(), directory, live()), 'list', '/list/sub/', putting);
  });

  it('reads the directory as a fetch reads <directory>/<name> (the bucket first, s3.prefix)', async () => {
    const cases: [HostConnection, string][] = [
      [host(), 'list'],
      [host({ 's3.bucketName': '' }), `/${s3.bucket}/list/`],
      [host({ 's3.bucketName': '' }), `${s3.bucket}/list`],
      [host({ 's3.prefix': 'pre/' }), 'list'],
    ];
    for (const [h, directory] of cases) {
      const entries = await s3Method().list!(h, directory, live());
      const file = entries.find((e) => e.type === 'file')!;
      const fetched = await s3Method().fetch!(h, `${directory.replace(/\/+$/, '')}/${file.name}`, live());
      expect((await bytesOf(fetched.stream)).byteLength).toBe(file.size);
    }
    const prefixed = await s3Method().list!(host({ 's3.prefix': 'pre/' }), 'list', live());
    expect(prefixed).toMatchObject([{ name: 'p.bin', type: 'file', size: 77 }]);
    const root = await s3Method().list!(host({ 's3.bucketName': '' }), s3.bucket, live());
    expect(root.map((e) => `${e.type} ${e.name}`)).toEqual(
      expect.arrayContaining(['directory list', 'directory listing']),
    );
  });

  it('reaches the bucket virtual-hosted (bucket.s3.localhost) by default', async () => {
    const h = host({ 's3.url': `http://s3.localhost:${s3.port}`, 's3.enablePathStyleAccess': 'no' });
    const entries = await s3Method({ fetch: loopbackFetch(s3.port) }).list!(h, 'list', live());
    expect(entries.map((e) => e.name).sort()).toEqual(['a.bin', 'b c+d.txt', 'sub']);
    expect(listRequests().at(-1)).toMatchObject({ method: 'GET', host: `${s3.bucket}.s3.localhost:${s3.port}` });
    expect(listRequests().at(-1)!.url).toMatch(/^\/\?list-type=2&prefix=list%2F&delimiter=%2F$/);
  });
});

describe('s3: paging', () => {
  it('follows the continuation tokens until a page is no longer truncated, each entry once', async () => {
    const names = Array.from({ length: 7 }, (_, i) => `f${i}.bin`);
    for (const name of names) await put(`paged/${name}`, payload(100 + names.indexOf(name)));
    await put('paged/d1/x', payload(1));
    await put('paged/e2/y', payload(1));
    // After the last key of the first page: s3rver gives it on that page and again on the next.
    await put('paged/f1x/z', payload(1));
    const from = listRequests().length;
    const entries = await s3Method({ listPageSize: 2 }).list!(host(), 'paged', live());
    expect(entries.map((e) => e.name).sort()).toEqual(['d1', 'e2', ...names, 'f1x'].sort());
    expect(byName(entries)['f6.bin']).toMatchObject({ type: 'file', size: 106 });
    const pages = listRequests().slice(from);
    expect(pages.length).toBeGreaterThanOrEqual(4);
    expect(pages[0]!.url).toContain('max-keys=2');
    expect(pages.slice(1).every((r) => r.url.includes('continuation-token='))).toBe(true);
  });
});

describe('s3: failures', () => {
  it('a missing bucket says so; a path with no bucket is refused', async () => {
    await expect(s3Method().list!(host({ 's3.bucketName': 'no-such-bucket' }), 'in', live())).rejects.toThrow(
      /S3 ListObjectsV2 no-such-bucket\/in\/ failed: 404 NoSuchBucket/,
    );
    await expect(s3Method().list!(host({ 's3.bucketName': '' }), '/', live())).rejects.toThrow(
      'No S3 bucket in /: set s3.bucketName or give the bucket as the first directory',
    );
  });

  it('a wrong secret fails with the S3 code, never the secret or the access key', async () => {
    const secret = 'not-the-Secret-123';
    const denied = await s3Method().list!(host({}, { password: secret }), 'list', live()).catch((e: Error) => e);
    expect(String(denied)).toMatch(/S3 ListObjectsV2 test-bucket\/list\/ failed: 403 SignatureDoesNotMatch/);
    expect(String(denied)).not.toContain(secret);
    expect(String(denied)).not.toContain(s3.accessKeyId);
  });

  it('an aborted listing rejects with the reason, before or while the server is asked', async () => {
    const aborted = new AbortController();
    aborted.abort(new Error('run cut at maximumDuration'));
    await expect(s3Method().list!(host(), 'list', aborted.signal)).rejects.toThrow('maximumDuration');

    s3.fault = (req) => (req.url?.includes('list-type=2') ? 'stall' : undefined);
    const controller = new AbortController();
    const from = listRequests().length;
    const listing = s3Method().list!(host(), 'list', controller.signal);
    await waitFor(() => listRequests().length > from);
    const started = Date.now();
    controller.abort(new Error('run cut at maximumDuration'));
    await expect(listing).rejects.toThrow('maximumDuration');
    expect(Date.now() - started).toBeLessThan(scaled(1000));
  });
});

describe('s3: a ListObjectsV2 page', () => {
  it('a folder marker (the key that is the prefix) is no entry; keys are unescaped', () => {
    const xml =
      '<ListBucketResult><Contents><Key>in/</Key><Size>0</Size></Contents>' +
      '<Contents><Key>in/a&amp;b.bin</Key><LastModified>2026-01-02T03:04:05.000Z</LastModified>' +
      '<Size>12</Size></Contents><CommonPrefixes><Prefix>in/d/</Prefix></CommonPrefixes></ListBucketResult>';
    expect(listedObjects(xml, 'in/')).toEqual([
      { name: 'a&b.bin', type: 'file', size: 12, time: new Date('2026-01-02T03:04:05Z') },
      { name: 'd', type: 'directory', size: null, time: null },
    ]);
  });
});
