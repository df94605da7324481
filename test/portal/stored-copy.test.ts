import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retrieve } from '../../core/retrieval/retrieve.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { directoryStore } from '../../functions/store/directory-store.ts';
import { scaled } from '../support/time.ts';
import { needs } from '../support/tools.ts';
import { call, connect, type SftpScene, sftpScene } from './sftp/support.ts';
import { bytesOf, incomingUser, md5, putFile, tool } from './support.ts';

/**
 * The portal serves a retrieved file's stored copy, by every protocol, with the sums measured as it
 * was stored: a source overwritten after retrieval (same size, other bytes) changes nothing the
 * portal sends, and HTTPS, S3 and rclone's checks find the registered bytes by their ETag and digest.
 */
let s: SftpScene;
let storeDir: string;
const registered = new Map<string, Buffer>([
  ['kept.bin', bytesOf(300_000, 1)],
  ['sub/changed.bin', bytesOf(5000, 2)],
]);
const sha512 = (bytes: Buffer) => createHash('sha512').update(bytes).digest('base64');
const CHANGED = registered.get('sub/changed.bin')!;

beforeAll(async () => {
  storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-portal-store-'));
  const store = directoryStore(storeDir);
  s = await sftpScene({}, { store });
  const { h, admin } = s;
  await h.addDestination('DEST');
  await incomingUser(h, admin, { id: 'alice', password: 'Secret-1' }, ['DEST']);
  for (const [target, bytes] of registered) await putFile(h, admin, s.sources, 'DEST', target, bytes);
  // As a mover's retriever does: each registered file read once from its source into the store.
  const deps = {
    ports: h.ports,
    repo: h.ports.repos.retrieval,
    store,
    sources: nodeSourceReader({ roots: [s.sources], hosts: [] }),
  };
  const claims = await h.ports.repos.retrieval.claim('mover-1', 60_000, 10);
  expect(claims).toHaveLength(registered.size);
  for (const claim of claims) {
    expect(await retrieve(deps, 'mover-1', claim, new AbortController().signal)).toBe('stored');
  }
  // The source changes after retrieval, to other bytes of the same size: the portal still serves what was registered.
  fs.writeFileSync(path.join(s.sources, 'DEST', 'sub/changed.bin'), bytesOf(CHANGED.length, 99));
}, scaled(60_000));
afterAll(async () => {
  await s?.close();
  fs.rmSync(storeDir, { recursive: true, force: true });
});

const url = (target: string) => `${s.url}/portal/data/DEST/${target}`;
const curl = (...args: string[]) => tool('curl', ['-sSk', '-u', 'alice:Secret-1', ...args]);
/** The headers curl dumped (-D) of the last answer, by lower-case name. */
const headersOf = (text: string) => {
  const last = text
    .trim()
    .split(/\r\n\r\n/)
    .at(-1)!;
  return Object.fromEntries(
    last
      .split('\r\n')
      .filter((l) => l.includes(':'))
      .map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
};

describe('HTTPS (curl)', needs('curl'), () => {
  it('downloads the registered bytes with a strong ETag and Repr-Digest of them, GET and HEAD alike', async () => {
    for (const [target, bytes] of registered) {
      const dump = path.join(s.work, 'headers');
      const r = await curl('-D', dump, url(target));
      expect(r.code, r.stderr).toBe(0);
      expect(md5(r.stdout), target).toBe(md5(bytes));
      const headers = headersOf(fs.readFileSync(dump, 'utf8'));
      expect(headers.etag).toBe(`"${md5(bytes)}"`);
      expect(headers['repr-digest']).toBe(`sha-512=:${sha512(bytes)}:`);
      const head = await curl('-I', url(target));
      expect(head.code, head.stderr).toBe(0);
      expect(headersOf(head.stdout.toString())).toMatchObject({
        etag: `"${md5(bytes)}"`,
        'repr-digest': `sha-512=:${sha512(bytes)}:`,
        'content-length': String(bytes.length),
      });
    }
  });

  it('answers 304 to If-None-Match with the ETag, and the file to another tag', async () => {
    const etag = `"${md5(CHANGED)}"`;
    const same = await curl(
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-H',
      `If-None-Match: ${etag}`,
      url('sub/changed.bin'),
    );
    expect(same.stdout.toString()).toBe('304');
    const other = await curl('-H', `If-None-Match: "${'0'.repeat(32)}"`, url('sub/changed.bin'));
    expect(md5(other.stdout)).toBe(md5(CHANGED));
  });

  it('sends the range while If-Range names the ETag, the whole file for another tag', async () => {
    const etag = `"${md5(CHANGED)}"`;
    const ranged = await curl(
      '-w',
      '\n%{http_code}',
      '-r',
      '100-199',
      '-H',
      `If-Range: ${etag}`,
      url('sub/changed.bin'),
    );
    const body = ranged.stdout.subarray(0, ranged.stdout.lastIndexOf('\n'));
    expect(ranged.stdout.subarray(ranged.stdout.lastIndexOf('\n') + 1).toString()).toBe('206');
    expect(body.equals(CHANGED.subarray(100, 200))).toBe(true);
    const stale = await curl('-r', '100-199', '-H', `If-Range: "${'0'.repeat(32)}"`, url('sub/changed.bin'));
    expect(stale.stdout.equals(CHANGED)).toBe(true);
  });
});

describe('SFTP', () => {
  it('reads the registered bytes, whole and from an offset', async () => {
    const { client, sftp } = await connect(s.sftp.port, { username: 'alice', password: 'Secret-1' });
    try {
      const whole = await call<Buffer>((done) => sftp.readFile('/DEST/sub/changed.bin', done));
      expect(whole.equals(CHANGED)).toBe(true);
      const handle = await call<Buffer>((done) => sftp.open('/DEST/sub/changed.bin', 'r', done));
      const part = Buffer.alloc(100);
      const read = await call<number>((done) => sftp.read(handle, part, 0, 100, 4000, (e, n) => done(e, n)));
      expect(read).toBe(100);
      expect(part.equals(CHANGED.subarray(4000, 4100))).toBe(true);
      await call((done) => sftp.close(handle, done));
    } finally {
      client.end();
    }
  });
});

const s3Options = () => [
  '--s3-provider',
  'Other',
  '--s3-endpoint',
  `${s.url}/portal/s3`,
  '--s3-force-path-style',
  '--s3-access-key-id',
  'alice',
  '--s3-secret-access-key',
  'Secret-1',
  '--no-check-certificate',
];
// A CA bundle of the environment's would replace rclone's transport, and with it --no-check-certificate.
const rclone = (...args: string[]) => tool('rclone', [...args, ...s3Options()], { env: { AWS_CA_BUNDLE: '' } });

describe('S3', () => {
  it(
    'rclone check finds every file the same as the registered bytes, by MD5 and by download',
    needs('rclone'),
    async () => {
      const local = path.join(s.work, 'registered');
      for (const [target, bytes] of registered) {
        fs.mkdirSync(path.dirname(path.join(local, target)), { recursive: true });
        fs.writeFileSync(path.join(local, target), bytes);
      }
      const sums = await rclone('md5sum', ':s3:DEST');
      expect(sums.code, sums.stderr).toBe(0);
      const listed = Object.fromEntries(
        sums.stdout
          .toString()
          .trim()
          .split('\n')
          .map((l) => [l.slice(34), l.slice(0, 32)]),
      );
      expect(listed).toEqual(Object.fromEntries([...registered].map(([t, b]) => [t, md5(b)])));
      const byHash = await rclone('check', local, ':s3:DEST');
      expect(byHash.code, byHash.stderr).toBe(0);
      expect(byHash.stderr).toMatch(/0 differences found/);
      expect(byHash.stderr).not.toMatch(/hashes could not be checked/);
      const byDownload = await rclone('check', '--download', local, ':s3:DEST');
      expect(byDownload.code, byDownload.stderr).toBe(0);
    },
  );

  it('aws s3api head-object and get-object show the MD5 ETag', needs('aws'), async () => {
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
    const head = await aws('s3api', 'head-object', '--bucket', 'DEST', '--key', 'sub/changed.bin');
    expect(head.code, head.stderr).toBe(0);
    expect(JSON.parse(head.stdout.toString())).toMatchObject({ ETag: `"${md5(CHANGED)}"`, ContentLength: 5000 });
    const out = path.join(s.work, 'got.bin');
    const get = await aws('s3api', 'get-object', '--bucket', 'DEST', '--key', 'sub/changed.bin', out);
    expect(get.code, get.stderr).toBe(0);
    expect(JSON.parse(get.stdout.toString())).toMatchObject({ ETag: `"${md5(CHANGED)}"` });
    expect(fs.readFileSync(out).equals(CHANGED)).toBe(true);
  });
});
