import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_READ_LENGTH } from '../../../functions/portal-sftp/file-handles.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, incomingUser, md5, putFile, tool } from '../support.ts';
import { call, connect, rcloneSftpEnv, type SftpScene, sftpScene } from './support.ts';

/**
 * A READ's length is the client's to choose, up to 4 GiB: the server answers at most
 * MAX_READ_LENGTH of it (a short read, as OpenSSH's sftp-server does), so that one request never
 * makes it hold a whole large file; clients that ask for more than that still get whole files.
 */
let s: SftpScene;
let reader: ReturnType<SftpScene['keyPair']>;
const SIZE = 48 * 1024 * 1024;
let digest: string;

beforeAll(async () => {
  s = await sftpScene();
  const { h, admin } = s;
  await h.addDestination('DEST');
  await incomingUser(h, admin, { id: 'reader', password: 'Secret-1' }, ['DEST']);
  const bytes = bytesOf(SIZE, 7);
  digest = md5(bytes);
  await putFile(h, admin, s.sources, 'DEST', 'large.bin', bytes);
  reader = s.keyPair('reader');
  await s.addKey('reader', reader.line);
}, 120_000);
afterAll(() => s?.close());

/** This process's resident memory now, and its peak since the last `forgetPeak` (MiB). */
const memory = (which: 'VmRSS' | 'VmHWM') =>
  Number(/(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8').split(`${which}:`)[1]!)![1]) / 1024;
const forgetPeak = () => fs.writeFileSync('/proc/self/clear_refs', '5');

const fileDigest = (file: string) => createHash('md5').update(fs.readFileSync(file)).digest('hex');

/** What ssh2's client keeps to itself of its SFTP channel: how much it asks for in one READ and takes in one answer. */
interface ClientLimits {
  _maxReadLen: number;
  _maxInPktLen: number;
}

describe('a READ longer than the server answers', () => {
  it('gets a short read of at most 256 KiB, and the server never holds the length asked for', async () => {
    const { client, sftp } = await connect(s.sftp.port, { username: 'reader', password: 'Secret-1' });
    try {
      // One READ of the whole file, and the client takes an answer of any size: only the server limits it.
      const limits = sftp as unknown as ClientLimits;
      limits._maxReadLen = SIZE;
      limits._maxInPktLen = SIZE + 1024;
      const handle = await call<Buffer>((done) => sftp.open('/DEST/large.bin', 'r', done));
      const into = Buffer.alloc(SIZE);
      const rssBefore = memory('VmRSS');
      forgetPeak();
      const got = await new Promise<number>((resolve, reject) =>
        sftp.read(handle, into, 0, SIZE, 0, (error, bytes) => (error ? reject(error) : resolve(bytes))),
      );
      const grown = memory('VmHWM') - rssBefore;
      // The server's bytes in this process: a READ held whole would be the file at least once over.
      expect(grown).toBeLessThan(SIZE / 1024 / 1024 / 3);
      expect(got).toBeGreaterThan(0);
      expect(got).toBeLessThanOrEqual(256 * 1024);
      expect(got).toBe(MAX_READ_LENGTH);
      // The rest follows at the next offset.
      const next = Buffer.alloc(1000);
      const more = await new Promise<number>((resolve, reject) =>
        sftp.read(handle, next, 0, 1000, got, (error, bytes) => (error ? reject(error) : resolve(bytes))),
      );
      expect(more).toBe(1000);
      expect(Buffer.concat([into.subarray(0, got), next])).toEqual(bytesOf(got + 1000, 7));
      await call((done) => sftp.close(handle, done));
    } finally {
      client.end();
    }
  });

  it('leaves OpenSSH sftp with reads of 1 MiB and rclone downloading the whole file byte-exact', {
    ...needs('sftp', 'rclone'),
    timeout: scaled(120_000),
  }, async () => {
    const batch = path.join(s.work, 'batch');
    fs.writeFileSync(batch, 'get /DEST/large.bin by-openssh.bin\n');
    const openssh = await tool(
      'sftp',
      [...s.sshOptions(reader.file), '-B', '1048576', '-b', batch, 'reader@127.0.0.1'],
      {
        cwd: s.work,
      },
    );
    expect(openssh.code, openssh.stderr).toBe(0);
    expect(fileDigest(path.join(s.work, 'by-openssh.bin'))).toBe(digest);

    const env = rcloneSftpEnv(s.sftp.port, 'reader', reader.file);
    const out = path.join(s.work, 'rclone');
    const copied = await tool('rclone', ['copy', 'portal:DEST/large.bin', out], { env });
    expect(copied.code, copied.stderr).toBe(0);
    expect(fileDigest(path.join(out, 'large.bin'))).toBe(digest);
  });
});
