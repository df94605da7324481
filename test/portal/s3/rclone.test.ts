import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, eventFields, eventLines, incomingUser, md5, putFile, tool } from '../support.ts';
import { type S3Scene, s3Scene } from './support.ts';

/**
 * rclone's s3 remote against the portal's S3 endpoint over real HTTPS, as a consumer configures it
 * for an S3-compatible service: listing, downloading and checking the files against their sources,
 * uploading (a single PUT and a multipart upload) and checking them back.
 */
let s: S3Scene;
const layout: Array<[string, number]> = [
  ['a.txt', 1000],
  ['sub/b.bin', 300_000],
  ['sub/deep/c.bin', 3000],
  ['sub/name with spaces & ü.bin', 10],
  ['z/empty.bin', 0],
];

beforeAll(async () => {
  s = await s3Scene();
  await s.h.addDestination('DEST');
  await s.h.addDestination('OUT');
  await incomingUser(s.h, s.admin, { id: 'alice', password: 'Secret-1', grant: ['put', 'delete'] }, ['DEST', 'OUT']);
  for (const [i, [target, size]] of layout.entries()) {
    await putFile(s.h, s.admin, s.sources, 'DEST', target, bytesOf(size, i + 1));
  }
}, scaled(60_000));
afterAll(() => s?.close());

const rclone = (...args: string[]) => rcloneAt(`${s.url}/portal/s3`, ...args);
const rcloneAt = (endpoint: string, ...args: string[]) =>
  tool(
    'rclone',
    [
      ...args,
      '--s3-provider',
      'Other',
      '--s3-endpoint',
      endpoint,
      '--s3-force-path-style',
      '--s3-access-key-id',
      'alice',
      '--s3-secret-access-key',
      'Secret-1',
      // The test server's certificate is its own.
      '--no-check-certificate',
      '--s3-upload-cutoff',
      '5M',
      '--s3-chunk-size',
      '5M',
    ],
    // A CA bundle of the environment's would replace rclone's transport, and with it --no-check-certificate.
    { env: { AWS_CA_BUNDLE: '' } },
  );

describe('rclone (s3 remote)', needs('rclone'), () => {
  it('lsjson -R lists every file with its size, directories included', async () => {
    const r = await rclone('lsjson', '-R', ':s3:DEST');
    expect(r.code, r.stderr).toBe(0);
    const listed = JSON.parse(r.stdout.toString()) as Array<{ Path: string; Size: number; IsDir: boolean }>;
    const files = listed.filter((e) => !e.IsDir).map((e) => [e.Path, e.Size]);
    expect(files.sort()).toEqual([...layout].sort());
    expect(
      listed
        .filter((e) => e.IsDir)
        .map((e) => e.Path)
        .sort(),
    ).toEqual(['sub', 'sub/deep', 'z']);
  });

  it('copy downloads every file byte for byte, and check --download finds them the same as their sources', async () => {
    const out = path.join(s.work, 'copied');
    const before = eventLines(s.h, 'INH').length;
    const r = await rclone('copy', ':s3:DEST', out);
    expect(r.code, r.stderr).toBe(0);
    for (const [target] of layout) {
      expect(md5(fs.readFileSync(path.join(out, target))), target).toBe(
        md5(fs.readFileSync(path.join(s.sources, 'DEST', target))),
      );
    }
    const downloads = eventLines(s.h, 'INH').slice(before).map(eventFields);
    expect(downloads.every((l) => l.TransferProtocol === 's3' && l.Action === 'download')).toBe(true);
    expect(downloads.map((l) => l.FileName).sort()).toEqual(layout.map(([t]) => t).sort());
    const check = await rclone('check', '--download', path.join(s.sources, 'DEST'), ':s3:DEST');
    expect(check.code, check.stderr).toBe(0);
    expect(check.stderr).toMatch(/0 differences found/);
  });

  it('copy uploads (one PUT, one multipart upload) and check compares their MD5s', async () => {
    const local = path.join(s.work, 'to-upload');
    fs.mkdirSync(path.join(local, 'deeper'), { recursive: true });
    fs.writeFileSync(path.join(local, 'small.bin'), bytesOf(3000, 50));
    fs.writeFileSync(path.join(local, 'deeper', 'large.bin'), bytesOf(12 * 1024 * 1024, 51));
    const r = await rclone('copy', local, ':s3:DEST/in');
    expect(r.code, r.stderr).toBe(0);
    const check = await rclone('check', local, ':s3:DEST/in');
    expect(check.code, check.stderr).toBe(0);
    expect(check.stderr).toMatch(/0 differences found/);
    expect(check.stderr).not.toMatch(/could not be checked/);
    const uploads = eventLines(s.h, 'INH')
      .map(eventFields)
      .filter((l) => l.Action === 'upload');
    expect(uploads.map((l) => [l.FileName, l.BytesSent, l.TransferProtocol]).sort()).toEqual([
      ['in/deeper/large.bin', String(12 * 1024 * 1024), 's3'],
      ['in/small.bin', '3000', 's3'],
    ]);
  });

  it('on the S3 listener: reads a range, copies server-side between buckets and deletes', async () => {
    const at = (...args: string[]) => rcloneAt(s.listener.url, ...args);
    const buckets = await at('lsf', ':s3:');
    expect(buckets.stdout.toString()).toBe('DEST/\nOUT/\n');
    const range = await at('cat', '--offset', '10', '--count', '20', ':s3:DEST/sub/b.bin');
    expect(range.code, range.stderr).toBe(0);
    expect(md5(range.stdout)).toBe(md5(bytesOf(300_000, 2).subarray(10, 30)));
    // Both ends on the same remote: rclone copies server-side (CopyObject), then checks the copy by its MD5.
    const copied = await at('copyto', '-v', ':s3:DEST/sub/deep/c.bin', ':s3:OUT/copies/c.bin');
    expect(copied.code, copied.stderr).toBe(0);
    expect(copied.stderr).toMatch(/Copied \(server-side copy\)/);
    const check = await at('check', ':s3:DEST/sub/deep', ':s3:OUT/copies');
    expect(check.stderr).toMatch(/0 differences found/);
    expect((await at('deletefile', ':s3:OUT/copies/c.bin')).code).toBe(0);
    expect((await at('lsf', ':s3:OUT/copies')).stdout.toString()).toBe('');
  });
});
