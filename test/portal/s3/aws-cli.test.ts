import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, incomingUser, md5, type PortalScene, portalScene, putFile, tool } from '../support.ts';

/**
 * The AWS command line (`aws s3`, botocore) against the portal's S3 endpoint over real HTTPS, where
 * it is installed: listing, downloading and uploading (small and multipart) as its users script it.
 */
let s: PortalScene;

beforeAll(async () => {
  s = await portalScene();
  await s.h.addDestination('DEST');
  await incomingUser(s.h, s.admin, { id: 'alice', password: 'Secret-1', grant: ['put'] }, ['DEST']);
  await putFile(s.h, s.admin, s.sources, 'DEST', 'a.txt', bytesOf(1000, 1));
  await putFile(s.h, s.admin, s.sources, 'DEST', 'sub/b.bin', bytesOf(300_000, 2));
}, scaled(60_000));
afterAll(() => s?.close());

const aws = (...args: string[]) =>
  tool('aws', ['--endpoint-url', `${s.url}/portal/s3`, '--no-verify-ssl', '--region', 'us-east-1', ...args], {
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
});
