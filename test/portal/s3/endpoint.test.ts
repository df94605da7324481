import { createHash, createHmac } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataFiles, portalTraffic } from '../../../db/schema.ts';
import { basic } from '../../support/harness.ts';
import { scaled } from '../../support/time.ts';
import {
  bytesOf,
  eventFields,
  eventLines,
  incomingUser,
  md5,
  type PortalScene,
  portalScene,
  putFile,
} from '../support.ts';
import { BASE, s3, signed, xmlAll, xmlText } from './support.ts';

/**
 * The portal's S3 endpoint as an SDK uses it (aws4fetch signing each request, in the Authorization
 * header or in the URL): the listing's rules, downloads with their validators and ranges, uploads,
 * the login check's refusals in S3's words, and the accounting every protocol of the portal shares.
 */
let s: PortalScene;
const files = new Map<string, Buffer>();
const alice = { accessKeyId: 'alice', secretAccessKey: 'Secret-1' };
const bob = { accessKeyId: 'bob', secretAccessKey: 'Secret-2' };

beforeAll(async () => {
  s = await portalScene({
    portalS3Domain: 's3.example.org',
    failedAuth: { failedAuthRules: { refusePairAt: 3 }, sleep: async () => {} },
  });
  const { h, admin } = s;
  for (const d of ['DEST', 'OTHER', 'OPEN']) await h.addDestination(d);
  await incomingUser(h, admin, { id: 'alice', password: 'Secret-1', grant: ['put', 'delete'] }, ['DEST']);
  await incomingUser(h, admin, { id: 'bob', password: 'Secret-2' }, ['OTHER']);
  await incomingUser(h, admin, { id: 'pub', mode: 'open-access' }, ['OPEN']);
  await incomingUser(h, admin, { id: 'ghost', password: 'Secret-3', active: false }, ['DEST']);
  await incomingUser(h, admin, { id: 'selfie', password: 'Secret-4', mode: 'self-service' }, ['DEST']);
  await incomingUser(h, admin, { id: 'nos3', password: 'Secret-5' }, ['DEST']);
  await h.ports.repos.portal.setOption('nos3', 'portal.excludeProtocols', 's3');
  await incomingUser(h, admin, { id: 'single', password: 'Secret-6' }, ['DEST']);
  await h.ports.repos.portal.setOption('single', 'portal.maxConnections', '1');
  await incomingUser(h, admin, { id: 'thrifty', password: 'Secret-7' }, ['DEST']);
  await h.ports.repos.portal.setOption('thrifty', 'portal.maxDownloadBytes', '1000');
  await incomingUser(h, admin, { id: 'capped', password: 'Secret-8', grant: ['put'] }, ['DEST']);
  await h.ports.repos.portal.setOption('capped', 'portal.maxUploadBytes', '1000');
  await incomingUser(h, admin, { id: 'counted', password: 'Secret-9', grant: ['put'] }, ['DEST']);
  const layout: Array<[string, number]> = [
    ['a.txt', 1000],
    ['dir/b.bin', 5000],
    ['dir/d.bin', 20],
    ['dir/sub/c.bin', 300],
    ['sp ace/ü.txt', 10],
    ['z.bin', 70_000],
  ];
  for (const [i, [target, size]] of layout.entries()) {
    const put = await putFile(h, admin, s.sources, 'DEST', target, bytesOf(size, i + 1));
    files.set(target, put.bytes);
    if (target === 'a.txt') {
      await h.db
        .update(dataFiles)
        .set({ checksum: md5(put.bytes) })
        .where(eq(dataFiles.id, put.id));
    }
  }
  await putFile(h, admin, s.sources, 'OTHER', 'o.txt', bytesOf(10, 50));
  await putFile(h, admin, s.sources, 'OPEN', 'pub.txt', bytesOf(100, 60));
}, scaled(60_000));
afterAll(() => s?.close());

const url = (p: string) => `${BASE}/${p}`;
const lines = (kind: string) => eventLines(s.h, kind).map(eventFields);
const keysOf = (xml: string) => xmlAll(xml, 'Key');
/** The keys of DEST in byte order (the layout's order). */
const sortedKeys = () => [...files.keys()];
const code = async (r: Response) => [r.status, xmlText(await r.text(), 'Code')];

describe('listings', () => {
  it('ListBuckets: the destinations of the user who signed', async () => {
    const r = await s3(s.h, url(''), alice);
    const xml = await r.text();
    expect(r.status).toBe(200);
    expect(xmlAll(xml, 'Name')).toEqual(['DEST']);
    expect(xmlText(xml, 'ID')).toBe('alice');
  });

  it('ListObjectsV2: every key in byte order, with sizes, KeyCount and no truncation', async () => {
    const xml = await (await s3(s.h, url('DEST?list-type=2'), alice)).text();
    expect(keysOf(xml)).toEqual(sortedKeys());
    expect(xmlAll(xml, 'Size').map(Number)).toEqual(sortedKeys().map((k) => files.get(k)!.length));
    expect(xmlText(xml, 'KeyCount')).toBe(String(files.size));
    expect(xmlText(xml, 'IsTruncated')).toBe('false');
    expect(xml).toContain(`<ETag>&quot;${md5(files.get('a.txt')!)}&quot;</ETag>`);
  });

  it('a delimiter rolls the keys below it into common prefixes, level by level', async () => {
    const root = await (await s3(s.h, url('DEST?list-type=2&delimiter=%2F'), alice)).text();
    expect(keysOf(root)).toEqual(['a.txt', 'z.bin']);
    expect(xmlAll(root, 'Prefix').slice(1)).toEqual(['dir/', 'sp ace/']);
    const dir = await (await s3(s.h, url('DEST?list-type=2&delimiter=%2F&prefix=dir%2F'), alice)).text();
    expect(keysOf(dir)).toEqual(['dir/b.bin', 'dir/d.bin']);
    expect(xmlAll(dir, 'Prefix').slice(1)).toEqual(['dir/sub/']);
    // A prefix that ends inside a name, and a delimiter that is no '/'.
    const partial = await (await s3(s.h, url('DEST?list-type=2&delimiter=%2F&prefix=dir%2Fs'), alice)).text();
    expect(xmlAll(partial, 'Prefix').slice(1)).toEqual(['dir/sub/']);
    const dots = await (await s3(s.h, url('DEST?list-type=2&delimiter=.'), alice)).text();
    expect(xmlAll(dots, 'Prefix').slice(1)).toEqual(['a.', 'dir/b.', 'dir/d.', 'dir/sub/c.', 'sp ace/ü.', 'z.']);
  });

  it('pages of max-keys follow each other by continuation token to the same keys and prefixes', async () => {
    for (const query of ['', '&delimiter=%2F', '&delimiter=%2F&prefix=dir%2F']) {
      const whole = await (await s3(s.h, url(`DEST?list-type=2${query}`), alice)).text();
      const seen: string[] = [];
      let token: string | null = null;
      for (let page = 0; page < 20; page++) {
        const next = token === null ? '' : `&continuation-token=${encodeURIComponent(token)}`;
        const xml = await (await s3(s.h, url(`DEST?list-type=2&max-keys=2${query}${next}`), alice)).text();
        const got = [...keysOf(xml), ...xmlAll(xml, 'Prefix').slice(1)];
        expect(got.length).toBeLessThanOrEqual(2);
        expect(xmlText(xml, 'KeyCount')).toBe(String(got.length));
        seen.push(...got);
        token = xmlText(xml, 'NextContinuationToken');
        expect(xmlText(xml, 'IsTruncated')).toBe(String(token !== null));
        if (token === null) break;
      }
      expect(seen.sort()).toEqual([...keysOf(whole), ...xmlAll(whole, 'Prefix').slice(1)].sort());
    }
  });

  it('start-after, V1 markers, URL-encoded keys, and a bad token', async () => {
    const after = await (await s3(s.h, url('DEST?list-type=2&start-after=dir%2Fd.bin'), alice)).text();
    expect(keysOf(after)).toEqual(['dir/sub/c.bin', 'sp ace/ü.txt', 'z.bin']);
    const v1 = await (await s3(s.h, url('DEST?max-keys=2&delimiter=%2F'), alice)).text();
    expect([...keysOf(v1), ...xmlAll(v1, 'Prefix').slice(1)]).toEqual(['a.txt', 'dir/']);
    expect(xmlText(v1, 'NextMarker')).toBe('dir/');
    const rest = await (await s3(s.h, url('DEST?delimiter=%2F&marker=dir%2F'), alice)).text();
    expect([...keysOf(rest), ...xmlAll(rest, 'Prefix').slice(1)]).toEqual(['z.bin', 'sp ace/']);
    const encoded = await (await s3(s.h, url('DEST?list-type=2&prefix=sp&encoding-type=url'), alice)).text();
    expect(keysOf(encoded)).toEqual(['sp%20ace/%C3%BC.txt']);
    const bad = await s3(s.h, url('DEST?list-type=2&continuation-token=%25%25'), alice);
    expect(bad.status).toBe(400);
    expect(xmlText(await bad.text(), 'Code')).toBe('InvalidArgument');
  });
});

describe('downloads', () => {
  it('GetObject: the bytes, the MD5 as ETag, Last-Modified; HeadObject the same headers without them', async () => {
    const r = await s3(s.h, url('DEST/a.txt'), alice);
    expect(r.status).toBe(200);
    expect(Buffer.from(await r.arrayBuffer())).toEqual(files.get('a.txt'));
    expect(r.headers.get('etag')).toBe(`"${md5(files.get('a.txt')!)}"`);
    expect(Date.parse(r.headers.get('last-modified')!)).toBeLessThanOrEqual(Date.now());
    const head = await s3(s.h, url('DEST/sp%20ace/%C3%BC.txt'), alice, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('10');
    expect(await head.text()).toBe('');
  });

  it('Range: 206 with Content-Range; past the end 416 InvalidRange', async () => {
    const r = await s3(s.h, url('DEST/z.bin'), alice, { headers: { range: 'bytes=1000-1999' } });
    expect(r.status).toBe(206);
    expect(r.headers.get('content-range')).toBe('bytes 1000-1999/70000');
    expect(Buffer.from(await r.arrayBuffer())).toEqual(files.get('z.bin')!.subarray(1000, 2000));
    const past = await s3(s.h, url('DEST/z.bin'), alice, { headers: { range: 'bytes=70000-' } });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe('bytes */70000');
    expect(xmlText(await past.text(), 'Code')).toBe('InvalidRange');
  });

  it('If-None-Match and If-Modified-Since answer 304 as the HTTPS downloads do', async () => {
    const etag = `"${md5(files.get('a.txt')!)}"`;
    expect((await s3(s.h, url('DEST/a.txt'), alice, { headers: { 'if-none-match': etag } })).status).toBe(304);
    const later = new Date(Date.now() + 60_000).toUTCString();
    expect((await s3(s.h, url('DEST/a.txt'), alice, { headers: { 'if-modified-since': later } })).status).toBe(304);
  });

  it('NoSuchKey in S3 XML with the request id; a HEAD of it 404 without a body', async () => {
    const r = await s3(s.h, url('DEST/missing.bin'), alice);
    const xml = await r.text();
    expect(r.status).toBe(404);
    expect(xmlText(xml, 'Code')).toBe('NoSuchKey');
    expect(xmlText(xml, 'RequestId')).toBe(r.headers.get('x-amz-request-id'));
    expect((await s3(s.h, url('DEST/missing.bin'), alice, { method: 'HEAD' })).status).toBe(404);
  });

  it('a presigned URL downloads while valid; expired, it is refused', async () => {
    const r = await s3(s.h, url('DEST/a.txt'), alice, { presign: 300 });
    expect(r.status).toBe(200);
    expect(Buffer.from(await r.arrayBuffer())).toEqual(files.get('a.txt'));
    const old = await s3(s.h, url('DEST/a.txt'), alice, { presign: 60, datetime: new Date(Date.now() - 120_000) });
    expect(old.status).toBe(403);
    const xml = await old.text();
    expect(xmlText(xml, 'Code')).toBe('AccessDenied');
    expect(xmlText(xml, 'Message')).toBe('Request has expired');
    const week = await s3(s.h, url('DEST/a.txt'), alice, { presign: 8 * 24 * 3600 });
    expect(week.status).toBe(400);
  });

  it('virtual-host style: the bucket named by the Host below the S3 domain', async () => {
    const r = await s3(s.h, 'https://dest.s3.example.org/portal/s3/dir/b.bin', alice);
    expect(r.status).toBe(200);
    expect(Buffer.from(await r.arrayBuffer())).toEqual(files.get('dir/b.bin'));
    const listed = await (
      await s3(s.h, 'https://dest.s3.example.org/portal/s3/?list-type=2&prefix=dir%2F', alice)
    ).text();
    expect(keysOf(listed)).toEqual(['dir/b.bin', 'dir/d.bin', 'dir/sub/c.bin']);
  });

  it('GetBucketLocation and HeadBucket, which clients ask first; other sub-resources NotImplemented', async () => {
    const location = await s3(s.h, url('DEST?location'), alice);
    expect(await location.text()).toContain('<LocationConstraint');
    expect((await s3(s.h, url('DEST'), alice, { method: 'HEAD' })).status).toBe(200);
    const acl = await s3(s.h, url('DEST?acl'), alice);
    expect(acl.status).toBe(501);
    expect(xmlText(await acl.text(), 'Code')).toBe('NotImplemented');
  });
});

describe('who gets in', () => {
  const lastDea = () => lines('DEA').at(-1);

  it('a wrong secret: SignatureDoesNotMatch, a failed login (DEA)', async () => {
    const r = await s3(s.h, url('DEST/a.txt'), { ...alice, secretAccessKey: 'wrong' });
    expect(await code(r)).toEqual([403, 'SignatureDoesNotMatch']);
    expect(lastDea()).toMatchObject({ UserId: 'alice', Message: 'Password authentication failed' });
  });

  it("one user's secret signing for another's access key is a wrong signature", async () => {
    const r = await s3(s.h, url('DEST/a.txt'), { accessKeyId: 'alice', secretAccessKey: bob.secretAccessKey });
    expect(await code(r)).toEqual([403, 'SignatureDoesNotMatch']);
  });

  it('wrong signatures count as failed logins: a pair that failed too often gets SlowDown', async () => {
    const from = { headers: { 'x-test-address': '10.0.0.9' } };
    const wrong = { ...alice, secretAccessKey: 'guess' };
    for (let i = 0; i < 3; i++) {
      expect(await code(await s3(s.h, url('DEST/a.txt'), wrong, from))).toEqual([403, 'SignatureDoesNotMatch']);
    }
    const refused = await s3(s.h, url('DEST/a.txt'), wrong, from);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await code(refused)).toEqual([503, 'SlowDown']);
  });

  it('an unknown access key: InvalidAccessKeyId', async () => {
    const r = await s3(s.h, url('DEST/a.txt'), { accessKeyId: 'nobody', secretAccessKey: 'x' });
    expect(await code(r)).toEqual([403, 'InvalidAccessKeyId']);
    expect(lastDea()).toMatchObject({ UserId: 'nobody', Message: 'Not found' });
  });

  it("another user's bucket answers as one that does not exist", async () => {
    expect(await code(await s3(s.h, url('OTHER/o.txt'), alice))).toEqual([404, 'NoSuchBucket']);
    expect(await code(await s3(s.h, url('OTHER?list-type=2'), alice))).toEqual([404, 'NoSuchBucket']);
    expect(await code(await s3(s.h, url('NOPE?list-type=2'), alice))).toEqual([404, 'NoSuchBucket']);
    expect(await code(await s3(s.h, url('OTHER/o.txt'), bob))).toEqual([200, null]);
  });

  it('keys that would leave the tree are refused, however encoded', async () => {
    for (const key of ['..%2F..%2FOTHER%2Fo.txt', 'dir%2F..%2F..%2Fa.txt', 'dir%2F.%2Fb.bin', 'dir//b.bin', '%5C..']) {
      expect(await code(await s3(s.h, url(`DEST/${key}`), alice)), key).toEqual([400, 'InvalidArgument']);
    }
    // Dot segments of the path itself are resolved with the URL before any route sees it: to
    // another bucket, which is none of the user's, or out of /portal/s3 to the HTTPS portal,
    // which takes no signature.
    expect(await code(await s3(s.h, url('DEST/%2E%2E/OTHER/o.txt'), alice))).toEqual([404, 'NoSuchBucket']);
    const out = await s3(s.h, url('DEST/dir/%2E%2E/%2E%2E/%2E%2E/data/OTHER/o.txt'), alice);
    expect(out.status).toBe(401);
  });

  it('an inactive user is refused with a right signature (DEA Disabled)', async () => {
    const r = await s3(s.h, url('DEST/a.txt'), { accessKeyId: 'ghost', secretAccessKey: 'Secret-3' });
    expect(await code(r)).toEqual([403, 'AccessDenied']);
    expect(lastDea()).toMatchObject({ UserId: 'ghost', Message: 'Disabled' });
  });

  it("a self-service user's access key cannot sign: its subscribers' passwords are kept as hashes only", async () => {
    const r = await s3(s.h, url('DEST/a.txt'), { accessKeyId: 'selfie', secretAccessKey: 'Secret-4' });
    expect(await code(r)).toEqual([403, 'InvalidAccessKeyId']);
  });

  it('a request signed 20 minutes ago: RequestTimeTooSkewed', async () => {
    const r = await s3(s.h, url('DEST/a.txt'), alice, { datetime: new Date(Date.now() - 20 * 60_000) });
    expect(await code(r)).toEqual([403, 'RequestTimeTooSkewed']);
  });

  it("anonymous: an open-access user's bucket answers, a standard one's and the bucket list do not", async () => {
    const open = await s3(s.h, url('OPEN/pub.txt'), null);
    expect(open.status).toBe(200);
    expect((await open.arrayBuffer()).byteLength).toBe(100);
    expect(keysOf(await (await s3(s.h, url('OPEN?list-type=2'), null)).text())).toEqual(['pub.txt']);
    expect(await code(await s3(s.h, url('DEST/a.txt'), null))).toEqual([403, 'AccessDenied']);
    expect(await code(await s3(s.h, url('DEST?list-type=2'), null))).toEqual([403, 'AccessDenied']);
    expect(await code(await s3(s.h, url(''), null))).toEqual([403, 'AccessDenied']);
  });
});

describe('accounting and limits', () => {
  it('a download writes its INH line under the protocol s3', async () => {
    const r = await s3(s.h, url('DEST/dir/b.bin'), alice, { headers: { range: 'bytes=0-99' } });
    await r.arrayBuffer();
    expect(lines('INH').at(-1)).toMatchObject({
      DestinationName: 'DEST',
      FileName: 'dir/b.bin',
      BytesSent: '100',
      UserId: 'alice',
      TransferProtocol: 's3',
      Action: 'download',
    });
  });

  it('portal.excludeProtocols=s3 refuses S3 and leaves HTTPS open', async () => {
    const r = await s3(s.h, url('DEST/a.txt'), { accessKeyId: 'nos3', secretAccessKey: 'Secret-5' });
    expect(await code(r)).toEqual([403, 'AccessDenied']);
    expect(lines('DEA').at(-1)).toMatchObject({ UserId: 'nos3', Message: 'Protocol s3 not allowed' });
    const https = await s.h.call('GET', '/portal/data/DEST/a.txt', { auth: basic('nos3', 'Secret-5') });
    expect(https.status).toBe(200);
  });

  it('portal.maxConnections counts a running S3 download: SlowDown until it ends', async () => {
    const single = { accessKeyId: 'single', secretAccessKey: 'Secret-6' };
    const first = await s3(s.h, url('DEST/z.bin'), single);
    expect(first.status).toBe(200);
    const second = await s3(s.h, url('DEST/a.txt'), single);
    expect(await code(second)).toEqual([503, 'SlowDown']);
    await first.body!.cancel();
    const third = await s3(s.h, url('DEST/a.txt'), single);
    expect(third.status).toBe(200);
    await third.arrayBuffer();
  });

  it('refuses every request with SlowDown once the download quota is spent, the reason in a DEA line', async () => {
    const thrifty = { accessKeyId: 'thrifty', secretAccessKey: 'Secret-7' };
    const first = await s3(s.h, url('DEST/a.txt'), thrifty);
    expect(first.status).toBe(200);
    expect(Buffer.from(await first.arrayBuffer())).toEqual(files.get('a.txt'));
    await s.h.settle();
    const before = lines('DEA').length;
    const refused = await s3(s.h, url('DEST/a.txt'), thrifty);
    const xml = await refused.text();
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect([refused.status, xmlText(xml, 'Code'), xmlText(xml, 'Message')]).toEqual([
      503,
      'SlowDown',
      'Please reduce your request rate.',
    ]);
    expect(await code(await s3(s.h, url('DEST?list-type=2'), thrifty))).toEqual([503, 'SlowDown']);
    expect(lines('DEA').slice(before)).toEqual([
      expect.objectContaining({ UserId: 'thrifty', Message: 'Download quota exceeded', Context: 's3:test' }),
      expect.objectContaining({ UserId: 'thrifty', Message: 'Download quota exceeded', Context: 's3:test' }),
    ]);
  });

  it("counts S3 downloads and uploads in the user's traffic per minute, under the protocol s3", async () => {
    const counted = { accessKeyId: 'counted', secretAccessKey: 'Secret-9' };
    await (await s3(s.h, url('DEST/z.bin'), counted)).arrayBuffer();
    await (await s3(s.h, url('DEST/dir/b.bin'), counted, { headers: { range: 'bytes=0-99' } })).arrayBuffer();
    // A HEAD moves no bytes: no transfer.
    expect((await s3(s.h, url('DEST/a.txt'), counted, { method: 'HEAD' })).status).toBe(200);
    const put = bytesOf(3000, 110);
    const sha256 = createHash('sha256').update(put).digest('hex');
    const r = await s3(s.h, url('DEST/counted/put.bin'), counted, { method: 'PUT', body: put, payloadHash: sha256 });
    expect(r.status).toBe(200);
    // A multipart upload's bytes count once, as its parts arrive (the completed file adds none).
    const created = await (await s3(s.h, url('DEST/counted/multi.bin?uploads'), counted, { method: 'POST' })).text();
    const uploadId = xmlText(created, 'UploadId')!;
    const part = bytesOf(2000, 111);
    const sent = await s3(s.h, url(`DEST/counted/multi.bin?partNumber=1&uploadId=${uploadId}`), counted, {
      method: 'PUT',
      body: part,
      payloadHash: 'UNSIGNED-PAYLOAD',
    });
    const etag = sent.headers.get('etag');
    const body =
      '<CompleteMultipartUpload>' +
      `<Part><PartNumber>1</PartNumber><ETag>${etag}</ETag></Part>` +
      '</CompleteMultipartUpload>';
    const done = await s3(s.h, url(`DEST/counted/multi.bin?uploadId=${uploadId}`), counted, { method: 'POST', body });
    expect(done.status).toBe(200);
    await s.h.settle();

    const rows = await s.h.db.select().from(portalTraffic).where(eq(portalTraffic.userId, 'counted'));
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.protocol).toBe('s3');
      expect(row.minute.getTime() % 60_000).toBe(0);
    }
    const sum = (key: 'downloadBytes' | 'uploadBytes' | 'downloads' | 'uploads') =>
      rows.reduce((n, row) => n + row[key], 0);
    const totals = {
      downloadBytes: sum('downloadBytes'),
      uploadBytes: sum('uploadBytes'),
      downloads: sum('downloads'),
      uploads: sum('uploads'),
    };
    expect(totals).toEqual({
      downloadBytes: files.get('z.bin')!.length + 100,
      uploadBytes: put.length + part.length,
      downloads: 2,
      uploads: 2,
    });
    // As the INH lines count them, and as the repository reads them back for quotas and the chart.
    const inh = lines('INH').filter((l) => l.UserId === 'counted');
    expect(inh.every((l) => l.TransferProtocol === 's3')).toBe(true);
    const bytesOfAction = (action: string) =>
      inh.filter((l) => l.Action === action).reduce((n, l) => n + Number(l.BytesSent), 0);
    expect([bytesOfAction('download'), bytesOfAction('upload')]).toEqual([totals.downloadBytes, totals.uploadBytes]);
    const since = new Date(Math.min(...rows.map((row) => row.minute.getTime())));
    expect(await s.h.ports.repos.portal.trafficSince('counted', since)).toEqual(totals);
    const series = await s.h.ports.repos.portal.trafficSeries('counted', since);
    const minutes = [...new Set(rows.map((row) => row.minute.getTime()))].sort((a, b) => a - b);
    expect(series.map((m) => m.minute.getTime())).toEqual(minutes);
    expect(series.reduce((n, m) => n + m.downloadBytes + m.uploadBytes, 0)).toBe(
      totals.downloadBytes + totals.uploadBytes,
    );
  });
});

describe('uploads', () => {
  const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

  it('PutObject with its payload hash registers the file; it lists and downloads with its MD5', async () => {
    const bytes = bytesOf(40_000, 70);
    const r = await s3(s.h, url('DEST/up/put.bin'), alice, { method: 'PUT', body: bytes, payloadHash: sha256(bytes) });
    expect(r.status).toBe(200);
    expect(r.headers.get('etag')).toBe(`"${md5(bytes)}"`);
    expect(lines('INH').at(-1)).toMatchObject({ FileName: 'up/put.bin', TransferProtocol: 's3', Action: 'upload' });
    const got = await s3(s.h, url('DEST/up/put.bin'), alice);
    expect(Buffer.from(await got.arrayBuffer())).toEqual(bytes);
    expect(got.headers.get('etag')).toBe(`"${md5(bytes)}"`);
  });

  it('a body that does not match its payload hash is refused and registers nothing', async () => {
    const bytes = bytesOf(1000, 71);
    const r = await s3(s.h, url('DEST/up/bad.bin'), alice, {
      method: 'PUT',
      body: bytes,
      payloadHash: sha256(bytesOf(1000, 72)),
    });
    expect(await code(r)).toEqual([400, 'XAmzContentSHA256Mismatch']);
    expect((await s3(s.h, url('DEST/up/bad.bin'), alice, { method: 'HEAD' })).status).toBe(404);
  });

  it('without the put permission: AccessDenied', async () => {
    const r = await s3(s.h, url('OTHER/x.bin'), bob, {
      method: 'PUT',
      body: 'x',
      payloadHash: sha256(Buffer.from('x')),
    });
    expect(await code(r)).toEqual([403, 'AccessDenied']);
  });

  it('a multipart upload: parts, then complete, gives one file of their bytes; abort leaves nothing', async () => {
    const created = await (await s3(s.h, url('DEST/up/multi.bin?uploads'), alice, { method: 'POST' })).text();
    const uploadId = xmlText(created, 'UploadId')!;
    const parts = [bytesOf(6 * 1024 * 1024, 80), bytesOf(1234, 81)];
    const etags: string[] = [];
    for (const [i, part] of parts.entries()) {
      const r = await s3(s.h, url(`DEST/up/multi.bin?partNumber=${i + 1}&uploadId=${uploadId}`), alice, {
        method: 'PUT',
        body: part,
        payloadHash: 'UNSIGNED-PAYLOAD',
      });
      expect(r.status).toBe(200);
      etags.push(r.headers.get('etag')!);
    }
    expect(etags).toEqual(parts.map((p) => `"${md5(p)}"`));
    const body =
      '<CompleteMultipartUpload>' +
      etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join('') +
      '</CompleteMultipartUpload>';
    const done = await s3(s.h, url(`DEST/up/multi.bin?uploadId=${uploadId}`), alice, { method: 'POST', body });
    expect(done.status).toBe(200);
    expect(xmlText(await done.text(), 'ETag')).toMatch(/-2&quot;$/);
    const got = await s3(s.h, url('DEST/up/multi.bin'), alice);
    expect(md5(Buffer.from(await got.arrayBuffer()))).toBe(md5(Buffer.concat(parts)));
    // Completed, the upload is gone.
    const again = await s3(s.h, url(`DEST/up/multi.bin?uploadId=${uploadId}`), alice, { method: 'POST', body });
    expect(await code(again)).toEqual([404, 'NoSuchUpload']);

    const other = xmlText(
      await (await s3(s.h, url('DEST/up/gone.bin?uploads'), alice, { method: 'POST' })).text(),
      'UploadId',
    );
    const elsewhere = await s3(s.h, url(`DEST/up/multi.bin?partNumber=1&uploadId=${other}`), alice, {
      method: 'PUT',
      body: 'x',
      payloadHash: 'UNSIGNED-PAYLOAD',
    });
    expect(await code(elsewhere)).toEqual([404, 'NoSuchUpload']);
    expect((await s3(s.h, url(`DEST/up/gone.bin?uploadId=${other}`), alice, { method: 'DELETE' })).status).toBe(204);
    const after = await s3(s.h, url(`DEST/up/gone.bin?partNumber=1&uploadId=${other}`), alice, {
      method: 'PUT',
      body: 'x',
      payloadHash: 'UNSIGNED-PAYLOAD',
    });
    expect(await code(after)).toEqual([404, 'NoSuchUpload']);
  });

  it('an aws-chunked body: each chunk signed in a chain from the request; a forged chunk is refused', async () => {
    const bytes = bytesOf(150_000, 90);
    const chunks = [bytes.subarray(0, 65536), bytes.subarray(65536, 131072), bytes.subarray(131072), Buffer.alloc(0)];
    const send = async (key: string, tamper: boolean) => {
      const length = chunks.reduce((n, c) => n + c.length.toString(16).length + 17 + 64 + 4 + c.length, 0);
      const request = await signed(url(`DEST/${key}`), alice, {
        method: 'PUT',
        payloadHash: 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
        headers: {
          'content-encoding': 'aws-chunked',
          'content-length': String(length),
          'x-amz-decoded-content-length': String(bytes.length),
        },
      });
      const amzDate = request.headers.get('x-amz-date')!;
      const scope = `${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request`;
      const hmac = (k: Buffer | string, text: string | Buffer) => createHmac('sha256', k).update(text).digest();
      const signingKey = ['us-east-1', 's3', 'aws4_request'].reduce(
        (k, part) => hmac(k, part),
        hmac(`AWS4${alice.secretAccessKey}`, amzDate.slice(0, 8)),
      );
      let previous = /Signature=([0-9a-f]{64})/.exec(request.headers.get('authorization')!)![1]!;
      const hash = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
      const parts = chunks.map((chunk, i) => {
        const toSign = ['AWS4-HMAC-SHA256-PAYLOAD', amzDate, scope, previous, hash(''), hash(chunk)].join('\n');
        previous = hmac(signingKey, toSign).toString('hex');
        const sent = tamper && i === 1 ? Buffer.from(chunk).fill(0, 0, 10) : chunk;
        return Buffer.concat([
          Buffer.from(`${chunk.length.toString(16)};chunk-signature=${previous}\r\n`),
          sent,
          Buffer.from('\r\n'),
        ]);
      });
      const body = Buffer.concat(parts);
      expect(body.length).toBe(length);
      return s.h.app.request(request.url.toString(), { method: 'PUT', headers: request.headers, body });
    };
    expect((await send('up/chunked.bin', false)).status).toBe(200);
    const got = await s3(s.h, url('DEST/up/chunked.bin'), alice);
    expect(md5(Buffer.from(await got.arrayBuffer()))).toBe(md5(bytes));
    expect(await code(await send('up/forged.bin', true))).toEqual([403, 'SignatureDoesNotMatch']);
    expect((await s3(s.h, url('DEST/up/forged.bin'), alice, { method: 'HEAD' })).status).toBe(404);
  });

  it("an SDK's default upload (unsigned aws-chunked, a CRC32 trailer); a body not matching it is refused", async () => {
    const bytes = bytesOf(100_000, 91);
    const crc = zlib.crc32(bytes);
    const trailer = Buffer.from([crc >>> 24, (crc >>> 16) & 255, (crc >>> 8) & 255, crc & 255]).toString('base64');
    const send = async (key: string, sent: Buffer) => {
      const chunks = [sent.subarray(0, 65536), sent.subarray(65536)];
      const body = Buffer.concat([
        ...chunks.flatMap((c) => [Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n')]),
        Buffer.from(`0\r\nx-amz-checksum-crc32:${trailer}\r\n\r\n`),
      ]);
      const request = await signed(url(`DEST/${key}`), alice, {
        method: 'PUT',
        payloadHash: 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
        headers: {
          'content-encoding': 'aws-chunked',
          'x-amz-decoded-content-length': String(sent.length),
          'x-amz-trailer': 'x-amz-checksum-crc32',
        },
      });
      return s.h.app.request(request.url.toString(), { method: 'PUT', headers: request.headers, body });
    };
    expect((await send('up/trailer.bin', bytes)).status).toBe(200);
    const got = await s3(s.h, url('DEST/up/trailer.bin'), alice);
    expect(md5(Buffer.from(await got.arrayBuffer()))).toBe(md5(bytes));
    const changed = Buffer.from(bytes);
    changed[70_000] = changed[70_000]! ^ 1;
    expect(await code(await send('up/changed.bin', changed))).toEqual([400, 'BadDigest']);
    expect((await s3(s.h, url('DEST/up/changed.bin'), alice, { method: 'HEAD' })).status).toBe(404);
  });

  it('DeleteObject with the delete permission removes the file from the bucket', async () => {
    const bytes = Buffer.from('short-lived');
    await s3(s.h, url('DEST/up/del.txt'), alice, { method: 'PUT', body: bytes, payloadHash: sha256(bytes) });
    expect((await s3(s.h, url('DEST/up/del.txt'), alice, { method: 'DELETE' })).status).toBe(204);
    expect((await s3(s.h, url('DEST/up/del.txt'), alice, { method: 'HEAD' })).status).toBe(404);
  });

  it('refuses a PutObject going over the upload quota, before or while it is sent; then the login', async () => {
    const capped = { accessKeyId: 'capped', secretAccessKey: 'Secret-8' };
    const put = (key: string, bytes: Buffer, headers: Record<string, string> = {}) =>
      s3(s.h, url(`DEST/quota/${key}`), capped, { method: 'PUT', body: bytes, payloadHash: sha256(bytes), headers });
    const uploaded = async () => (await s.h.ports.repos.portal.trafficSince('capped', new Date(0))).uploadBytes;
    expect((await put('q1.bin', bytesOf(600, 100))).status).toBe(200);
    expect(await uploaded()).toBe(600);
    const quotaRefusal = async (r: Response) => {
      const xml = await r.text();
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
      return [r.status, xmlText(xml, 'Code'), xmlText(xml, 'Message')];
    };
    // Its length said beforehand: refused before a byte is taken.
    const declared = await put('q2.bin', bytesOf(600, 101), { 'content-length': '600' });
    expect(await quotaRefusal(declared)).toEqual([503, 'SlowDown', 'Upload quota exceeded']);
    expect(await uploaded()).toBe(600);
    // No length given: cut once it goes over, the bytes taken counted.
    const streamed = await put('q3.bin', bytesOf(600, 102));
    expect(await quotaRefusal(streamed)).toEqual([503, 'SlowDown', 'Upload quota exceeded']);
    expect(await uploaded()).toBeGreaterThan(1000);
    expect(await uploaded()).toBeLessThanOrEqual(1200);
    for (const key of ['q2.bin', 'q3.bin']) {
      expect(await s.h.ports.repos.portal.file('DEST', `quota/${key}`, new Date()), key).toBeNull();
      expect(fs.existsSync(path.join(s.uploads, 'DEST', 'quota', key)), key).toBe(false);
    }
    expect(fs.readdirSync(path.join(s.uploads, '.partial')).filter((name) => name.endsWith('.part'))).toEqual([]);
    const traffic = await s.h.db.select().from(portalTraffic).where(eq(portalTraffic.userId, 'capped'));
    expect(traffic.reduce((n, row) => n + row.uploads, 0)).toBe(1);
    const spent = await put('q4.bin', Buffer.from('x'));
    expect(await quotaRefusal(spent)).toEqual([503, 'SlowDown', 'Please reduce your request rate.']);
    expect(lines('DEA').at(-1)).toMatchObject({ UserId: 'capped', Message: 'Upload quota exceeded' });
  });
});
