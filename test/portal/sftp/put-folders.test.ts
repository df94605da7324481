import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/engine.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, folderMakers, md5, tool } from '../support.ts';
import { call, connect, rcloneSftpEnv, type SftpScene, sftpScene } from './support.ts';

/**
 * Folders are virtual, and `put` implies making them: clients that make each folder before putting
 * files in it (rclone's sftp remote, `scp -r`, OpenSSH's sftp `mkdir`) upload whole trees with the
 * `put` permission alone. Without `put`, MKDIR needs `mkdir` under its path rule.
 */
let s: SftpScene;
let putter: ReturnType<SftpScene['keyPair']>;
let reader: ReturnType<SftpScene['keyPair']>;
let maker: ReturnType<SftpScene['keyPair']>;
/** A local tree with folders two deep: its files by relative path. */
const TREE = {
  'a.bin': bytesOf(70_000, 1),
  'sub/b.txt': Buffer.from('b\n'),
  'sub/deeper/c.bin': bytesOf(3000, 3),
  'other/d.bin': bytesOf(10, 4),
};

beforeAll(async () => {
  s = await sftpScene();
  await folderMakers(s);
  putter = s.keyPair('putter');
  reader = s.keyPair('reader');
  maker = s.keyPair('maker');
  for (const [user, key] of [
    ['putter', putter],
    ['reader', reader],
    ['maker', maker],
  ] as const) {
    await s.addKey(user, key.line);
  }
  const local = path.join(s.work, 'tree');
  for (const [name, bytes] of Object.entries(TREE)) {
    fs.mkdirSync(path.dirname(path.join(local, name)), { recursive: true });
    fs.writeFileSync(path.join(local, name), bytes);
  }
}, scaled(60_000));
afterAll(() => s?.close());

const batch = async (key: string, user: string, commands: string[]) => {
  const file = path.join(s.work, `batch-${Math.random().toString(36).slice(2)}`);
  fs.writeFileSync(file, `${commands.join('\n')}\n`);
  return tool('sftp', [...s.sshOptions(key), '-b', file, `${user}@127.0.0.1`], { cwd: s.work });
};

/** Each file of the local tree is in the destination below `folder`, with its bytes. */
async function expectTreeAt(folder: string) {
  for (const [name, bytes] of Object.entries(TREE)) {
    const file = await s.h.ports.repos.portal.file('DEST', `${folder}/${name}`, new Date());
    expect(file, name).toMatchObject({ size: bytes.length });
    expect(md5(fs.readFileSync(file!.source)), name).toBe(md5(bytes));
  }
}

describe('with put alone', needs('ssh-keygen'), () => {
  it('rclone (sftp) copies a tree of folders into the portal', needs('rclone'), async () => {
    const env = rcloneSftpEnv(s.sftp.port, 'putter', putter.file);
    const copied = await tool('rclone', ['copy', path.join(s.work, 'tree'), 'portal:DEST/rc'], { env });
    expect(copied.code, copied.stderr).toBe(0);
    await expectTreeAt('rc');
    const checked = await tool('rclone', ['check', '--size-only', path.join(s.work, 'tree'), 'portal:DEST/rc'], {
      env,
    });
    expect(checked.code, checked.stderr).toBe(0);
  });

  it('scp -r (OpenSSH, SFTP mode) copies a tree of folders into the portal', needs('scp'), async () => {
    const r = await tool(
      'scp',
      ['-r', ...s.sshOptions(putter.file), path.join(s.work, 'tree'), 'putter@127.0.0.1:/DEST/scp'],
      { cwd: s.work },
    );
    expect(r.code, r.stderr).toBe(0);
    await expectTreeAt('scp');
  });

  it("OpenSSH sftp's mkdir makes folders to put files in, listed with their time", needs('sftp'), async () => {
    fs.writeFileSync(path.join(s.work, 'x.bin'), 'x\n');
    const r = await batch(putter.file, 'putter', [
      'mkdir /DEST/made',
      'mkdir /DEST/made/empty',
      'mkdir /DEST/made/full',
      'put x.bin /DEST/made/full/x.bin',
      'ls -l /DEST/made',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const out = r.stdout.toString();
    // Each folder with a time (`ls -l`'s recent form, hours and minutes), never 1970's.
    expect(out).toMatch(/^drwxr-xr-x .* [A-Z][a-z]{2} [ \d]\d \d\d:\d\d empty$/m);
    expect(out).toMatch(/^drwxr-xr-x .* [A-Z][a-z]{2} [ \d]\d \d\d:\d\d full$/m);
    expect(out).not.toMatch(/1970/);
    expect(await s.h.ports.repos.portal.file('DEST', 'made/full/x.bin', new Date())).toMatchObject({ size: 2 });
    // A folder that already is one is not made again (clients then look at it, and go on).
    const again = await batch(putter.file, 'putter', ['mkdir /DEST/made/full']);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/Failure|exists/i);
  });
});

describe('a folder made on one connection', needs('ssh-keygen'), () => {
  it("is the user's on each of its connections while one is open, as rclone's uploads over several expect", async () => {
    const login = { username: 'putter', privateKey: fs.readFileSync(putter.file, 'utf8') };
    const [a, b] = await Promise.all([connect(s.sftp.port, login), connect(s.sftp.port, login)]);
    await call<void>((done) => a.sftp.mkdir('/DEST/shared', done));
    const seen = await call<{ isDirectory(): boolean }>((done) => b.sftp.stat('/DEST/shared', done));
    expect(seen.isDirectory()).toBe(true);
    const listed = await call<{ filename: string }[]>((done) => b.sftp.readdir('/DEST', done));
    expect(listed.map((e) => e.filename)).toContain('shared');
    // Made already, on either connection: as on a disk.
    await expect(call<void>((done) => b.sftp.mkdir('/DEST/shared', done))).rejects.toThrow(/exists/i);
    a.client.end();
    const stillSeen = await call<{ isDirectory(): boolean }>((done) => b.sftp.stat('/DEST/shared', done));
    expect(stillSeen.isDirectory()).toBe(true);
    await new Promise<void>((closed) => b.client.once('close', () => closed()).end());
    // Once every connection that could see it is closed (the server hears of it a moment later), an empty
    // folder is gone.
    await eventually(async () => {
      const later = await connect(s.sftp.port, login);
      const gone = await call((done) => later.sftp.stat('/DEST/shared', done)).then(
        () => undefined,
        (e: Error) => (/No such file/.test(e.message) ? true : undefined),
      );
      later.client.end();
      return gone;
    });
  });
});

describe('without put', needs('ssh-keygen'), () => {
  it('refuses MKDIR to a user with neither put nor mkdir', needs('sftp'), async () => {
    const r = await batch(reader.file, 'reader', ['mkdir /DEST/nope']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/Permission denied/);
  });

  it('takes mkdir under its path rule', needs('sftp'), async () => {
    const r = await batch(maker.file, 'maker', ['mkdir /DEST/ok', 'mkdir /DEST/ok/sub', 'ls -1 /DEST/ok']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.toString()).toMatch(/^\/DEST\/ok\/sub$/m);
    const refused = await batch(maker.file, 'maker', ['mkdir /DEST/elsewhere']);
    expect(refused.stderr).toMatch(/Permission denied/);
  });
});
