import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, incomingUser, md5, putFile, tool } from '../support.ts';
import { type S3Scene, s3Scene } from './support.ts';

/**
 * The AWS command line (`aws s3`, botocore) against the portal's S3 endpoint over real HTTPS, where
 * it is installed: listing, downloading and uploading (small and multipart) as its users script it,
 * under /portal/s3 of the main port and at the root of the S3 listener, where copies are made too.
 */
let s: S3Scene;

beforeAll(async () => {
  s = await s3Scene();
  await s.h.addDestination('DEST');
  await s.h.addDestination('OUT');
  await incomingUser(s.h, s.admin, { id: 'alice', password: 'Secret-1', grant: ['put', 'delete'] }, ['DEST', 'OUT']);
  await putFile(s.h, s.admin, s.sources, 'DEST', 'a.txt', bytesOf(1000, 1));
  await putFile(s.h, s.admin, s.sources, 'DEST', 'sub/b.bin', bytesOf(300_000, 2));
}, scaled(60_000));
afterAll(() => s?.close());

const aws = (...args: string[]) => awsAt(`${s.url}/portal/s3`, ...args);
const awsAt = (endpoint: string, ...args: string[]) =>
  tool('aws', ['--endpoint-url', endpoint, '--no-verify-ssl', '--region', 'us-east-1', ...args], {
    env: {
      AWS_ACCESS_KEY_ID: 'alice',
      AWS_SECRET_ACCESS_KEY: 'Secret-1',
      AWS_CA_BUNDLE: '',
      AWS_CONFIG_FILE: '/dev/null',
      AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
      PYTHONWARNINGS: 'ignore',
    },
  });

describe('aws s3 (the AWS command line)', needs('aws'), () => {
  it('lists, downloads and uploads, a large file in parts', async () => {
    const listed = await aws('s3', 'ls', '--recursive', 's3://DEST/');
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.toString()).toMatch(/1000 a\.txt\n.*300000 sub\/b\.bin\n$/s);
    const out = path.join(s.work, 'b.bin');
    const got = await aws('s3', 'cp', 's3://DEST/sub/b.bin', out);
    expect(got.code, got.stderr).toBe(0);
    expect(md5(fs.readFileSync(out))).toBe(md5(bytesOf(300_000, 2)));

    const big = path.join(s.work, 'big.bin');
    fs.writeFileSync(big, bytesOf(20 * 1024 * 1024, 3));
    const up = await aws('s3', 'cp', big, 's3://DEST/in/big.bin');
    expect(up.code, up.stderr).toBe(0);
    const small = path.join(s.work, 'small.txt');
    fs.writeFileSync(small, 'a small file\n');
    const put = await aws('s3', 'cp', small, 's3://DEST/in/small.txt');
    expect(put.code, put.stderr).toBe(0);
    const back = path.join(s.work, 'big-back.bin');
    expect((await aws('s3', 'cp', 's3://DEST/in/big.bin', back)).code).toBe(0);
    expect(md5(fs.readFileSync(back))).toBe(md5(fs.readFileSync(big)));
    const wrong = await tool(
      'aws',
      ['--endpoint-url', `${s.url}/portal/s3`, '--no-verify-ssl', 's3', 'ls', 's3://DEST/'],
      {
        env: {
          AWS_ACCESS_KEY_ID: 'alice',
          AWS_SECRET_ACCESS_KEY: 'wrong',
          AWS_CA_BUNDLE: '',
          AWS_CONFIG_FILE: '/dev/null',
        },
      },
    );
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/SignatureDoesNotMatch/);
  });

  it('on the S3 listener: copies between buckets (in parts above 8 MiB), gets a range, heads and removes', async () => {
    const at = (...args: string[]) => awsAt(s.listener.url, ...args);
    expect((await at('s3', 'ls')).stdout.toString()).toMatch(/ DEST\n.* OUT\n$/s);
    const small = await at('s3', 'cp', 's3://DEST/a.txt', 's3://OUT/copies/a.txt');
    expect(small.code, small.stderr).toBe(0);
    const big = bytesOf(9 * 1024 * 1024 + 7, 4);
    fs.writeFileSync(path.join(s.work, 'nine.bin'), big);
    expect((await at('s3', 'cp', path.join(s.work, 'nine.bin'), 's3://DEST/in/nine.bin')).code).toBe(0);
    // Above its multipart threshold (8 MiB), the CLI copies in parts: UploadPartCopy, as its debug log says.
    const parts = await at('--debug', 's3', 'cp', 's3://DEST/in/nine.bin', 's3://OUT/copies/nine.bin');
    expect(parts.code, parts.stderr.slice(-2000)).toBe(0);
    expect(parts.stderr).toMatch(/operation_name=UploadPartCopy|UploadPartCopy/);
    const listed = (await at('s3', 'ls', '--recursive', 's3://OUT/')).stdout.toString();
    expect(listed).toMatch(/ 1000 copies\/a\.txt\n.* 9437191 copies\/nine\.bin\n$/s);
    const back = path.join(s.work, 'nine-back.bin');
    expect((await at('s3', 'cp', 's3://OUT/copies/nine.bin', back)).code).toBe(0);
    expect(md5(fs.readFileSync(back))).toBe(md5(big));

    const range = path.join(s.work, 'range.bin');
    const got = await at(
      's3api',
      'get-object',
      '--bucket',
      'DEST',
      '--key',
      'sub/b.bin',
      '--range',
      'bytes=10-19',
      range,
    );
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout.toString())).toMatchObject({ ContentLength: 10, ContentRange: 'bytes 10-19/300000' });
    expect(md5(fs.readFileSync(range))).toBe(md5(bytesOf(300_000, 2).subarray(10, 20)));
    const head = await at('s3api', 'head-object', '--bucket', 'OUT', '--key', 'copies/a.txt');
    expect(JSON.parse(head.stdout.toString())).toMatchObject({
      ContentLength: 1000,
      ETag: `"${md5(bytesOf(1000, 1))}"`,
    });
    expect((await at('s3', 'rm', 's3://OUT/copies/a.txt')).code).toBe(0);
    expect((await at('s3', 'ls', '--recursive', 's3://OUT/')).stdout.toString()).not.toContain('a.txt');
  });
});
