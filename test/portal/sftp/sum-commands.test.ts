import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, eventFields, eventLines, tool } from '../support.ts';
import { hex, password, STORED, type SumsScene, sumsScene } from './sums-scene.ts';
import { connect, rcloneSftpEnv } from './support.ts';

/**
 * The sums of the portal's files over SSH as consumers meet them: rclone's sftp remote finding
 * `md5sum` and comparing files by it (check, copy --checksum, md5sum), and OpenSSH's ssh running the
 * commands, with the rules of reading a file; every other command refused.
 */
let s: SumsScene;

beforeAll(async () => {
  s = await sumsScene(true);
}, scaled(120_000));
afterAll(() => s?.close());

const inh = () => eventLines(s.h, 'INH').map(eventFields);

/** rclone's remote `portal` as a user: hash commands found by rclone itself, its shell type too. */
const rcloneEnv = (user: string) => {
  const { RCLONE_CONFIG_PORTAL_SHELL_TYPE, RCLONE_CONFIG_PORTAL_DISABLE_HASHCHECK, ...env } = rcloneSftpEnv(
    s.sftp.port,
    user,
    s.keys[user]!.file,
  );
  return env;
};
const rclone = (user: string, ...args: string[]) => tool('rclone', args, { env: rcloneEnv(user) });
/** The registered files below `sums/`, written to a local directory. */
const localCopy = (name: string) => {
  const dir = path.join(s.work, name);
  for (const [target, bytes] of STORED) {
    fs.mkdirSync(path.join(dir, path.dirname(target)), { recursive: true });
    fs.writeFileSync(path.join(dir, target), bytes);
  }
  return path.join(dir, 'sums');
};

describe('rclone sftp remote', needs('ssh-keygen', 'rclone'), () => {
  it('finds md5sum by itself and lists the MD5 of every file, downloading nothing', async () => {
    const before = inh().length;
    const a = STORED.get('sums/a.bin')!;
    const one = await rclone('alice', 'md5sum', 'portal:DEST/sums/a.bin');
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout.toString()).toBe(`${hex('md5', a)}  a.bin\n`);
    // The tree with the command rclone found given: rclone 1.60, while it is still finding its hash
    // command, answers "hash unsupported" for the other files it sums at the same time.
    const env = { ...rcloneEnv('alice'), RCLONE_CONFIG_PORTAL_MD5SUM_COMMAND: 'md5sum' };
    const r = await tool('rclone', ['md5sum', 'portal:DEST'], { env });
    expect(r.code, r.stderr).toBe(0);
    const listed = Object.fromEntries(
      r.stdout
        .toString()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => [l.slice(34), l.slice(0, 32)]),
    );
    expect(listed).toEqual(Object.fromEntries([...STORED].map(([target, bytes]) => [target, hex('md5', bytes)])));
    expect(inh()).toHaveLength(before);
  });

  it('check finds the registered files the same by MD5, and one changed in place different', async () => {
    const local = localCopy('check');
    const same = await rclone('alice', 'check', local, 'portal:DEST/sums');
    expect(same.code, same.stderr).toBe(0);
    expect(same.stderr).toMatch(/0 differences found/);
    expect(same.stderr).toMatch(/3 matching files/);
    expect(same.stderr).not.toMatch(/hashes could not be checked/);
    // The same size, other bytes: only the sum tells them apart.
    fs.writeFileSync(path.join(local, 'with space.bin'), bytesOf(5000, 77));
    const changed = await rclone('alice', 'check', local, 'portal:DEST/sums');
    expect(changed.code).toBe(1);
    expect(changed.stderr).toMatch(/with space\.bin: md5 differ/);
    expect(changed.stderr).toMatch(/1 differences found/);
  });

  it('copy --checksum downloads only the file whose sum differs, and verifies it', async () => {
    const local = localCopy('checksum');
    fs.writeFileSync(path.join(local, "it's $5.txt"), Buffer.from('QUOTED\n'));
    // Times far from the server's: a copy by size and time would fetch every file again.
    for (const name of fs.readdirSync(local)) fs.utimesSync(path.join(local, name), 1_000_000, 1_000_000);
    const before = inh().length;
    const r = await rclone('alice', 'copy', '--checksum', '-v', 'portal:DEST/sums', local);
    expect(r.code, r.stderr).toBe(0);
    for (const [target, bytes] of STORED) {
      expect(fs.readFileSync(path.join(local, path.basename(target))).equals(bytes), target).toBe(true);
    }
    expect(
      inh()
        .slice(before)
        .map((e) => e.FileName),
    ).toEqual(["sums/it's $5.txt"]);
  });
});

/** OpenSSH's ssh running a command as a user, with the user's key; its input is empty (-n), as rclone's. */
const ssh = (user: string, command: string) =>
  tool('ssh', [
    '-n',
    ...s.sshOptions(s.keys[user]!.file).map((o) => (o === '-P' ? '-p' : o)),
    `${user}@127.0.0.1`,
    command,
  ]);

describe('OpenSSH ssh running the sum commands', needs('ssh-keygen', 'ssh'), () => {
  it('answers md5sum and sha512sum as GNU coreutils do, from the stored sums, downloading nothing', async () => {
    const before = inh().length;
    const traffic = await s.h.ports.repos.portal.trafficSince('alice', new Date(0));
    const a = STORED.get('sums/a.bin')!;
    const spaced = STORED.get('sums/with space.bin')!;
    const quoted = STORED.get("sums/it's $5.txt")!;
    const md5 = await ssh('alice', `md5sum /DEST/sums/a.bin '/DEST/sums/with space.bin' "/DEST/sums/it's \\$5.txt"`);
    expect(md5.code, md5.stderr).toBe(0);
    expect(md5.stdout.toString()).toBe(
      `${hex('md5', a)}  /DEST/sums/a.bin\n${hex('md5', spaced)}  /DEST/sums/with space.bin\n` +
        `${hex('md5', quoted)}  /DEST/sums/it's $5.txt\n`,
    );
    // rclone's own quoting: a backslash before each character a shell would act on; relative to `/`.
    const sha = await ssh('alice', "sha512sum DEST/sums/with\\ space.bin /DEST/sums/it\\'s\\ \\$5.txt");
    expect(sha.code, sha.stderr).toBe(0);
    expect(sha.stdout.toString()).toBe(
      `${hex('sha512', spaced)}  DEST/sums/with space.bin\n${hex('sha512', quoted)}  /DEST/sums/it's $5.txt\n`,
    );
    // The probe rclone starts with: the sum of an empty input.
    const probe = await ssh('alice', 'md5sum');
    expect(probe.stdout.toString()).toBe('d41d8cd98f00b204e9800998ecf8427e  -\n');
    expect(inh()).toHaveLength(before);
    expect(await s.h.ports.repos.portal.trafficSince('alice', new Date(0))).toEqual(traffic);
  });

  it('sums what the client sends when no file is named', async () => {
    const { client } = await connect(s.sftp.port, { username: 'alice', password: password('alice') });
    try {
      const out = await new Promise<string>((resolve, reject) =>
        client.exec('sha512sum', (error, stream) => {
          if (error) return reject(error);
          let text = '';
          stream.on('data', (d: Buffer) => (text += d.toString()));
          stream.on('close', () => resolve(text));
          stream.end(Buffer.from('abc'));
        }),
      );
      expect(out).toBe(`${hex('sha512', Buffer.from('abc'))}  -\n`);
    } finally {
      client.end();
    }
  });

  it('fails for a path the user may not read, as md5sum fails', async () => {
    const missing = await ssh('alice', 'md5sum /DEST/nothing.bin /OTHER/secret.bin /DEST/sums');
    expect(missing.code).toBe(1);
    expect(missing.stdout.toString()).toBe('');
    expect(missing.stderr).toBe(
      'md5sum: /DEST/nothing.bin: No such file or directory\n' +
        'md5sum: /OTHER/secret.bin: No such file or directory\n' +
        'md5sum: /DEST/sums: Is a directory\n',
    );
    for (const user of ['nog', 'ruled']) {
      const denied = await ssh(user, "md5sum '/DEST/sums/with space.bin'");
      expect(denied.code, user).toBe(1);
      expect(denied.stderr, user).toBe('md5sum: /DEST/sums/with space.bin: Permission denied\n');
    }
    const ruled = await ssh('ruled', 'md5sum /DEST/sums/a.bin');
    expect(ruled.stdout.toString()).toBe(`${hex('md5', STORED.get('sums/a.bin')!)}  /DEST/sums/a.bin\n`);
  });

  it('refuses every other command, shell syntax and option, and legacy scp', async () => {
    for (const command of [
      'sha1sum /DEST/sums/a.bin',
      'md5sum /DEST/sums/a.bin; id',
      'md5sum /DEST/sums/a.bin | cat',
      'md5sum $(id)',
      'md5sum "$HOME"',
      'md5sum /DEST/sums/*.bin',
      'md5sum -c /DEST/sums/a.bin',
      'md5sum --tag /DEST/sums/a.bin',
      'md5sum /DEST/sums/a.bin > /tmp/x',
      // rclone's probe of the shell's kind: refused, rclone takes it for a POSIX shell.
      `echo \${ShellId}%ComSpec%`,
      'scp -f /DEST/sums/a.bin',
      '/usr/bin/md5sum /DEST/sums/a.bin',
    ]) {
      const r = await ssh('alice', command);
      expect(r.code, command).toBe(255);
      expect(r.stderr, command).toMatch(/exec request failed/);
      expect(r.stdout.toString(), command).toBe('');
    }
    const legacy = await tool(
      'scp',
      ['-O', ...s.sshOptions(s.keys.alice!.file), 'alice@127.0.0.1:/DEST/sums/a.bin', path.join(s.work, 'legacy')],
      { cwd: s.work },
    );
    expect(legacy.code).not.toBe(0);
    expect(fs.existsSync(path.join(s.work, 'legacy'))).toBe(false);
  });
});
