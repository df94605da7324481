import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { tool } from '../support.ts';
import { EXTENDED, EXTENDED_REPLY, rawSftp, STATUS, statusOf, string, strings, uint32, uint64 } from './raw-sftp.ts';
import { hex, password, STORED, type SumsScene, sumsScene } from './sums-scene.ts';
import { rcloneSftpEnv } from './support.ts';

/**
 * Files never retrieved (ECPDS_RETRIEVAL=none): no sum is known of them but an MD5 recorded (here
 * of sums/a.bin, as an upload records one). They have no line of md5sum, which does not fail, so
 * that rclone copies and checks them by size instead of calling each one corrupted.
 */
let s: SumsScene;

beforeAll(async () => {
  s = await sumsScene(false);
}, scaled(120_000));
afterAll(() => s?.close());

const A = STORED.get('sums/a.bin')!;
const env = () => {
  const { RCLONE_CONFIG_PORTAL_SHELL_TYPE, RCLONE_CONFIG_PORTAL_DISABLE_HASHCHECK, ...rest } = rcloneSftpEnv(
    s.sftp.port,
    'alice',
    s.keys.alice!.file,
  );
  return rest;
};

describe('rclone sftp remote', needs('ssh-keygen', 'rclone'), () => {
  it('copies and checks the files, by MD5 where one is known and by size elsewhere, without an error', async () => {
    const local = path.join(s.work, 'copy');
    const copied = await tool('rclone', ['copy', 'portal:DEST/sums', local], { env: env() });
    expect(copied.code, copied.stderr).toBe(0);
    for (const [target, bytes] of STORED) {
      expect(fs.readFileSync(path.join(local, path.basename(target))).equals(bytes), target).toBe(true);
    }
    const checked = await tool('rclone', ['check', local, 'portal:DEST/sums'], { env: env() });
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stderr).toMatch(/0 differences found/);
    expect(checked.stderr).toMatch(/2 hashes could not be checked/);
    // The recorded MD5 still tells a changed file.
    fs.writeFileSync(path.join(local, 'a.bin'), Buffer.alloc(A.length));
    const changed = await tool('rclone', ['check', local, 'portal:DEST/sums'], { env: env() });
    expect(changed.code).toBe(1);
    expect(changed.stderr).toMatch(/a\.bin: md5 differ/);
  });
});

const ssh = (command: string) =>
  tool('ssh', [
    '-n',
    ...s.sshOptions(s.keys.alice!.file).map((o) => (o === '-P' ? '-p' : o)),
    'alice@127.0.0.1',
    command,
  ]);

describe('OpenSSH ssh', needs('ssh-keygen', 'ssh'), () => {
  it('prints the recorded MD5, and for a sum not known no line but a word on stderr, exiting 0', async () => {
    const md5 = await ssh("md5sum /DEST/sums/a.bin '/DEST/sums/with space.bin'");
    expect(md5.code, md5.stderr).toBe(0);
    expect(md5.stdout.toString()).toBe(`${hex('md5', A)}  /DEST/sums/a.bin\n`);
    expect(md5.stderr).toBe('md5sum: /DEST/sums/with space.bin: no checksum is known for this file yet\n');
    // Only an MD5 was recorded.
    const sha = await ssh('sha512sum /DEST/sums/a.bin');
    expect(sha.code, sha.stderr).toBe(0);
    expect(sha.stdout.toString()).toBe('');
    expect(sha.stderr).toBe('sha512sum: /DEST/sums/a.bin: no checksum is known for this file yet\n');
  });
});

describe('check-file-name', () => {
  it('answers the recorded MD5, and OP_UNSUPPORTED where no sum is known', async () => {
    const raw = await rawSftp(s.sftp.port, { username: 'alice', password: password('alice') });
    const ask = (file: string, algorithms: string) =>
      raw.request(
        EXTENDED,
        string('check-file-name'),
        string(file),
        string(algorithms),
        uint64(0n),
        uint64(0n),
        uint32(0),
      );
    try {
      const recorded = await ask('/DEST/sums/a.bin', 'sha512,md5');
      expect(recorded.type).toBe(EXTENDED_REPLY);
      const { values, rest } = strings(recorded.payload, 2);
      expect(values.map(String)).toEqual(['check-file', 'md5']);
      expect(rest.toString('hex')).toBe(hex('md5', A));
      const unknown = await ask('/DEST/sums/with space.bin', 'md5,sha512');
      expect(unknown.type).toBe(STATUS);
      expect(statusOf(unknown)).toEqual({ code: 8, message: 'No checksum is known for this file yet' });
      const other = await ask('/DEST/sums/a.bin', 'sha512');
      expect(statusOf(other)).toEqual({
        code: 8,
        message: 'No checksum of sha512 is known for this file (known: md5)',
      });
    } finally {
      raw.close();
    }
  });
});
