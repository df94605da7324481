import fs from 'node:fs';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataFiles, destinations } from '../../../db/schema.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, eventFields, eventLines, incomingUser, md5, putFile } from '../support.ts';
import { type S3Scene, s3cmdFor, s3Scene } from './support.ts';

/**
 * s3cmd (Debian's) against the portal's S3 listener over real HTTPS, configured as for any
 * S3-compatible service (host_base and host_bucket the listener: path style). s3cmd signs the path
 * as if the bucket were at the root of its host, which only the listener's root serves: listing,
 * downloading (resumed with a range), uploading (in parts too), copying and deleting.
 */
let s: S3Scene;
let s3cmd: ReturnType<typeof s3cmdFor>;
const A_TXT = bytesOf(1000, 1);
const B_BIN = bytesOf(300_000, 2);
const CREATED = new Date('2021-03-04T05:06:00Z');

beforeAll(async () => {
  s = await s3Scene();
  const { h, admin } = s;
  for (const d of ['DEST', 'OUT', 'READONLY']) await h.addDestination(d);
  await h.db.update(destinations).set({ createdAt: CREATED }).where(eq(destinations.name, 'DEST'));
  await incomingUser(h, admin, { id: 'alice', password: 'Secret-1', grant: ['put', 'delete'] }, ['DEST', 'OUT']);
  await incomingUser(h, admin, { id: 'reader', password: 'Secret-2' }, ['DEST', 'READONLY']);
  // a.txt with its MD5 recorded (as a delivery records it), sub/b.bin without: S3 gives it an ETag of its own.
  const a = await putFile(h, admin, s.sources, 'DEST', 'a.txt', A_TXT);
  await h.db
    .update(dataFiles)
    .set({ checksum: md5(A_TXT) })
    .where(eq(dataFiles.id, a.id));
  await putFile(h, admin, s.sources, 'DEST', 'sub/b.bin', B_BIN);
  s3cmd = s3cmdFor(s.work, s.listener.host, { accessKeyId: 'alice', secretAccessKey: 'Secret-1' });
}, scaled(60_000));
afterAll(() => s?.close());

const local = (name: string) => path.join(s.work, name);
const ok = (r: Awaited<ReturnType<typeof s3cmd>>) => {
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.toString();
};

describe('s3cmd', needs('s3cmd'), () => {
  it('lists the buckets with their creation dates, and a bucket by directory and recursively', async () => {
    const buckets = ok(await s3cmd('ls'));
    expect(buckets).toMatch(/^2021-03-04 05:06\s+s3:\/\/DEST\n.*\s+s3:\/\/OUT\n$/s);
    expect(ok(await s3cmd('ls', 's3://DEST/'))).toMatch(
      /^\s+DIR\s+s3:\/\/DEST\/sub\/\n.*\s1000\s+s3:\/\/DEST\/a\.txt\n$/s,
    );
    expect(ok(await s3cmd('ls', '--recursive', 's3://DEST/'))).toMatch(
      /\s1000\s+s3:\/\/DEST\/a\.txt\n.*\s300000\s+s3:\/\/DEST\/sub\/b\.bin\n$/s,
    );
  });

  it('downloads a file, resumes one with a range, and tells its size and MD5 (HEAD)', async () => {
    ok(await s3cmd('get', 's3://DEST/sub/b.bin', local('b.bin')));
    expect(md5(fs.readFileSync(local('b.bin')))).toBe(md5(B_BIN));

    // A partial download resumed: s3cmd asks for the rest with a Range, and only that is sent.
    fs.writeFileSync(local('b-part.bin'), B_BIN.subarray(0, 100_000));
    ok(await s3cmd('get', '--continue', 's3://DEST/sub/b.bin', local('b-part.bin')));
    expect(md5(fs.readFileSync(local('b-part.bin')))).toBe(md5(B_BIN));
    const resumed = eventLines(s.h, 'INH').map(eventFields).at(-1);
    expect(resumed).toMatchObject({ FileName: 'sub/b.bin', BytesSent: '200000', Action: 'download' });

    const info = ok(await s3cmd('info', 's3://DEST/a.txt'));
    expect(info).toMatch(/File size: 1000\n/);
    expect(info).toContain(`MD5 sum:   ${md5(A_TXT)}`);
  });

  it('uploads a file, and a larger one in parts, that download back whole', async () => {
    fs.writeFileSync(local('small.txt'), 'a small file\n');
    ok(await s3cmd('put', local('small.txt'), 's3://DEST/in/small.txt'));
    const big = bytesOf(12 * 1024 * 1024 + 5, 3);
    fs.writeFileSync(local('big.bin'), big);
    // --progress: s3cmd tells its parts only with its progress meter, off without a terminal.
    const args = ['put', '--progress', '--multipart-chunk-size-mb=5', local('big.bin'), 's3://DEST/in/big.bin'];
    expect(ok(await s3cmd(...args))).toMatch(/part 3 of 3/);
    ok(await s3cmd('get', 's3://DEST/in/big.bin', local('big-back.bin')));
    expect(md5(fs.readFileSync(local('big-back.bin')))).toBe(md5(big));
    ok(await s3cmd('get', 's3://DEST/in/small.txt', local('small-back.txt')));
    expect(fs.readFileSync(local('small-back.txt'), 'utf8')).toBe('a small file\n');
  });

  it('copies a file to another of its buckets, registered there as an upload', async () => {
    ok(await s3cmd('cp', 's3://DEST/sub/b.bin', 's3://OUT/copied/b.bin'));
    ok(await s3cmd('get', 's3://OUT/copied/b.bin', local('copied.bin')));
    expect(md5(fs.readFileSync(local('copied.bin')))).toBe(md5(B_BIN));
    expect(eventLines(s.h, 'INH').map(eventFields)).toContainEqual(
      expect.objectContaining({
        DestinationName: 'OUT',
        FileName: 'copied/b.bin',
        BytesSent: '300000',
        Action: 'upload',
      }),
    );
    // s3cmd looks the source up first (a listing), and says so.
    const missing = await s3cmd('cp', 's3://DEST/none.bin', 's3://OUT/none.bin');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/Key not found s3:\/\/DEST\/none\.bin/);
  });

  it('deletes a file', async () => {
    ok(await s3cmd('del', 's3://DEST/in/small.txt'));
    expect(ok(await s3cmd('ls', 's3://DEST/in/'))).not.toContain('small.txt');
  });

  it('is refused what the user may not do, and a wrong secret, in S3 words', async () => {
    const reader = s3cmdFor(s.work, s.listener.host, { accessKeyId: 'reader', secretAccessKey: 'Secret-2' });
    const copy = await reader('cp', 's3://DEST/a.txt', 's3://READONLY/a.txt');
    expect(copy.code).not.toBe(0);
    expect(copy.stderr).toMatch(/403 \(AccessDenied\)/);
    fs.writeFileSync(local('refused.txt'), 'no\n');
    const put = await reader('put', local('refused.txt'), 's3://DEST/refused.txt');
    expect(put.stderr).toMatch(/403 \(AccessDenied\)/);

    // Under /portal/s3 of the main port, s3cmd's signature of the path without it never matches: the
    // answer names the listener.
    const main = s3cmdFor(s.work, `${new URL(s.url).host}/portal/s3`, {
      accessKeyId: 'alice',
      secretAccessKey: 'Secret-1',
    });
    const beside = await main('ls', 's3://DEST/');
    expect(beside.code).not.toBe(0);
    expect(beside.stderr).toMatch(/SignatureDoesNotMatch.*needs the S3 listener \(ECPDS_PORTAL_S3_PORT\)/s);

    const wrong = s3cmdFor(s.work, s.listener.host, { accessKeyId: 'alice', secretAccessKey: 'wrong' });
    const refused = await wrong('ls', 's3://DEST/');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/SignatureDoesNotMatch/);
  });
});
