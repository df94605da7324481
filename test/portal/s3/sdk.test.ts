import dns from 'node:dns';
import https from 'node:https';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destinations } from '../../../db/schema.ts';
import { scaled } from '../../support/time.ts';
import { bytesOf, incomingUser, md5, putFile } from '../support.ts';
import { type S3Scene, s3Scene } from './support.ts';

/**
 * The AWS SDK for JavaScript (`@aws-sdk/client-s3`, its defaults: checksum trailers on uploads)
 * against the portal's S3 listener over real HTTPS, path style and virtual-host style
 * (`<bucket>.<ECPDS_PORTAL_S3_DOMAIN>`, every name resolved to the test server as a DNS wildcard
 * would): the buckets with their dates, listings, ranged downloads, uploads whole and in parts,
 * copies and deletes.
 */
let s: S3Scene;
const DOMAIN = 's3.portal.test';
const CREATED = new Date('2020-01-02T03:04:05.000Z');
const A_TXT = bytesOf(1000, 1);
const B_BIN = bytesOf(70_000, 2);

beforeAll(async () => {
  s = await s3Scene({ portalS3Domain: DOMAIN });
  const { h, admin } = s;
  for (const d of ['DEST', 'OUT']) await h.addDestination(d);
  await h.db.update(destinations).set({ createdAt: CREATED }).where(eq(destinations.name, 'DEST'));
  await incomingUser(h, admin, { id: 'alice', password: 'Secret-1', grant: ['put', 'delete'] }, ['DEST', 'OUT']);
  await putFile(h, admin, s.sources, 'DEST', 'a.txt', A_TXT);
  await putFile(h, admin, s.sources, 'DEST', 'sub/b.bin', B_BIN);
}, scaled(60_000));
afterAll(() => s?.close());

/** A client of the listener: its certificate is the test server's own, every name is the test server. */
const client = (style: 'path' | 'virtual-host') =>
  new S3Client({
    endpoint: style === 'path' ? s.listener.url : `https://${DOMAIN}:${new URL(s.listener.url).port}`,
    forcePathStyle: style === 'path',
    region: 'us-east-1',
    credentials: { accessKeyId: 'alice', secretAccessKey: 'Secret-1' },
    requestHandler: {
      httpsAgent: new https.Agent({
        rejectUnauthorized: false,
        lookup: (_name, options, callback) => dns.lookup('127.0.0.1', options, callback),
      }),
    },
  });
const bytesOfBody = async (body: { transformToByteArray(): Promise<Uint8Array> } | undefined) =>
  Buffer.from(await body!.transformToByteArray());

describe('@aws-sdk/client-s3, path style', () => {
  it("lists the user's buckets, each with its destination's creation date", async () => {
    const [out] = await s.h.db.select().from(destinations).where(eq(destinations.name, 'OUT'));
    const { Buckets } = await client('path').send(new ListBucketsCommand({}));
    expect(Buckets?.map((b) => [b.Name, b.CreationDate?.toISOString()])).toEqual([
      ['DEST', CREATED.toISOString()],
      ['OUT', out!.createdAt.toISOString()],
    ]);
  });

  it('lists objects, gets a range of one and heads one', async () => {
    const s3 = client('path');
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'DEST', Delimiter: '/' }));
    expect(listed.Contents?.map((c) => [c.Key, c.Size])).toEqual([['a.txt', 1000]]);
    expect(listed.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['sub/']);
    const part = await s3.send(new GetObjectCommand({ Bucket: 'DEST', Key: 'sub/b.bin', Range: 'bytes=100-199' }));
    expect(part.ContentRange).toBe(`bytes 100-199/${B_BIN.length}`);
    expect(md5(await bytesOfBody(part.Body))).toBe(md5(B_BIN.subarray(100, 200)));
    const head = await s3.send(new HeadObjectCommand({ Bucket: 'DEST', Key: 'sub/b.bin' }));
    expect(head.ContentLength).toBe(B_BIN.length);
    // No MD5 is known of a file never retrieved: an ETag all the same, in the form clients take for no MD5.
    expect(head.ETag).toMatch(/^"[0-9a-f]{32}-1"$/);
  });

  it('puts an object whole and in parts, copies one and deletes one', async () => {
    const s3 = client('path');
    const small = bytesOf(5000, 3);
    const put = await s3.send(new PutObjectCommand({ Bucket: 'DEST', Key: 'in/small.bin', Body: small }));
    expect(put.ETag).toBe(`"${md5(small)}"`);

    const big = bytesOf(6 * 1024 * 1024, 4);
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'DEST', Key: 'in/big.bin' }));
    const halves = [big.subarray(0, 5 * 1024 * 1024), big.subarray(5 * 1024 * 1024)];
    const Parts = [];
    for (const [i, Body] of halves.entries()) {
      const part = { Bucket: 'DEST', Key: 'in/big.bin', UploadId, PartNumber: i + 1, Body };
      Parts.push({ PartNumber: i + 1, ETag: (await s3.send(new UploadPartCommand(part))).ETag });
    }
    const done = { Bucket: 'DEST', Key: 'in/big.bin', UploadId, MultipartUpload: { Parts } };
    await s3.send(new CompleteMultipartUploadCommand(done));
    const back = await s3.send(new GetObjectCommand({ Bucket: 'DEST', Key: 'in/big.bin' }));
    expect(md5(await bytesOfBody(back.Body))).toBe(md5(big));

    const copy = { Bucket: 'OUT', Key: 'copies/small.bin', CopySource: 'DEST/in/small.bin' };
    const copied = await s3.send(new CopyObjectCommand(copy));
    expect(copied.CopyObjectResult?.ETag).toBe(`"${md5(small)}"`);
    const copyBack = await s3.send(new GetObjectCommand({ Bucket: 'OUT', Key: 'copies/small.bin' }));
    expect(md5(await bytesOfBody(copyBack.Body))).toBe(md5(small));

    await s3.send(new DeleteObjectCommand({ Bucket: 'DEST', Key: 'in/small.bin' }));
    await expect(s3.send(new HeadObjectCommand({ Bucket: 'DEST', Key: 'in/small.bin' }))).rejects.toMatchObject({
      name: 'NotFound',
    });
  });
});

describe('@aws-sdk/client-s3, virtual-host style', () => {
  it('addresses the bucket by the Host, at the root of the listener', async () => {
    // The SDK puts a bucket in the Host only when its name is a DNS label: the destination's name in lower case.
    const s3 = client('virtual-host');
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'dest', Prefix: 'sub/' }));
    expect(listed.Name).toBe('DEST');
    expect(listed.Contents?.map((c) => c.Key)).toEqual(['sub/b.bin']);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'dest', Key: 'a.txt', Range: 'bytes=0-9' }));
    expect(md5(await bytesOfBody(got.Body))).toBe(md5(A_TXT.subarray(0, 10)));
    // The source's bucket too, by its name in lower case.
    const copy = { Bucket: 'out', Key: 'virtual/a.txt', CopySource: 'dest/a.txt' };
    const copied = await s3.send(new CopyObjectCommand(copy));
    expect(copied.CopyObjectResult?.ETag).toBe(`"${md5(A_TXT)}"`);
    const back = await s3.send(new GetObjectCommand({ Bucket: 'out', Key: 'virtual/a.txt' }));
    expect(md5(await bytesOfBody(back.Body))).toBe(md5(A_TXT));
  });
});
