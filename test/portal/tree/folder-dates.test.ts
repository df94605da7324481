import fs from 'node:fs';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataFiles, destinations } from '../../../db/schema.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { call, connect, rcloneSftpEnv, type SftpScene, sftpScene } from '../sftp/support.ts';
import { incomingUser, putFile, tool } from '../support.ts';

/**
 * A folder's time is its newest file's, at any depth, as the user sees the files (not deleted ones,
 * nor others' held uploads); a destination's own folder without a file takes the destination's
 * creation. The same in the HTTPS listings (curl: JSON, CSV), SFTP's READDIR and STAT (OpenSSH's
 * `ls -l`, rclone's sftp remote), the root's destinations included.
 */
let s: SftpScene;
let key: ReturnType<SftpScene['keyPair']>;
const EMPTY_MADE = '2019-05-06T07:08:09Z';
/** Each file's path in DEST and its registration time. */
const FILES: Record<string, string> = {
  'top.txt': '2021-03-04T05:06:07Z',
  'a/old.bin': '2020-01-02T03:04:05Z',
  'a/b/new.bin': '2022-06-07T08:09:10Z',
  'c/only.bin': '2020-01-02T03:04:05Z',
  // Neighbours of `x/` in byte order, newer and older: none of them is x's.
  'x/f.bin': '2020-01-02T03:04:05Z',
  'x.y/f.bin': '2023-01-01T00:00:00Z',
  'x0/f.bin': '2019-01-01T00:00:00Z',
};
const NEWEST = '2023-01-01T00:00:00Z';

beforeAll(async () => {
  s = await sftpScene();
  const { h, admin } = s;
  for (const d of ['DEST', 'EMPTY']) await h.addDestination(d);
  await h.db
    .update(destinations)
    .set({ createdAt: new Date(EMPTY_MADE) })
    .where(eq(destinations.name, 'EMPTY'));
  await incomingUser(h, admin, { id: 'alice', password: 'Secret-1' }, ['DEST', 'EMPTY']);
  await incomingUser(h, admin, { id: 'plain', password: 'Secret-2' }, ['DEST']);
  await h.ports.repos.portal.revoke('plain', ['mtime']);
  for (const [target, at] of Object.entries(FILES)) {
    const { id } = await putFile(h, admin, s.sources, 'DEST', target, Buffer.from(`${target}\n`));
    await h.db
      .update(dataFiles)
      .set({ createdAt: new Date(at) })
      .where(eq(dataFiles.id, id));
  }
  // A newer file deleted since: its time is no folder's.
  const gone = await putFile(h, admin, s.sources, 'DEST', 'c/gone.bin', Buffer.from('gone\n'));
  const del = await h.call('DELETE', `/v1/datafile/del?id=${gone.id}`, { auth: admin });
  expect(del.status, del.text).toBe(200);
  key = s.keyPair('alice');
  await s.addKey('alice', key.line);
}, scaled(60_000));
afterAll(() => s?.close());

const curlJson = async (user: string, password: string, url: string) => {
  const r = await tool('curl', ['-sSk', '-u', `${user}:${password}`, '-H', 'accept: application/json', url]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout.toString()) as Array<{ name: string; type: string; lastModified: string | null }>;
};
const times = (rows: Array<{ name: string; lastModified: string | null }>) =>
  Object.fromEntries(rows.map((r) => [r.name, r.lastModified]));
const seconds = (iso: string) => new Date(iso).getTime() / 1000;

describe('the HTTPS listings', needs('curl'), () => {
  it('date each folder by its newest file, and an empty destination by its creation', async () => {
    const base = `${s.url}/portal/data`;
    expect(times(await curlJson('alice', 'Secret-1', `${base}/`))).toEqual({ DEST: NEWEST, EMPTY: EMPTY_MADE });
    expect(times(await curlJson('alice', 'Secret-1', `${base}/DEST/`))).toEqual({
      a: FILES['a/b/new.bin'],
      c: FILES['c/only.bin'],
      'top.txt': FILES['top.txt'],
      x: FILES['x/f.bin'],
      'x.y': FILES['x.y/f.bin'],
      x0: FILES['x0/f.bin'],
    });
    const csv = await tool('curl', ['-sSk', '-u', 'alice:Secret-1', '-H', 'accept: text/csv', `${base}/DEST/a/`]);
    expect(csv.stdout.toString().split('\r\n')).toContain(`b,directory,,${FILES['a/b/new.bin']}`);
  });

  it('show no time to a user without mtime, as for files', async () => {
    const rows = await curlJson('plain', 'Secret-2', `${s.url}/portal/data/DEST/`);
    expect(rows.map((r) => r.lastModified)).toEqual(rows.map(() => null));
    expect(times(await curlJson('plain', 'Secret-2', `${s.url}/portal/data/`))).toEqual({ DEST: null });
  });
});

describe('SFTP', needs('ssh-keygen'), () => {
  it("gives folders and destinations their time in READDIR and STAT, the root's its newest", async () => {
    const { client, sftp } = await connect(s.sftp.port, { username: 'alice', password: 'Secret-1' });
    try {
      const mtime = async (p: string) => (await call<{ mtime: number }>((done) => sftp.stat(p, done))).mtime;
      expect(await mtime('/')).toBe(seconds(NEWEST));
      expect(await mtime('/DEST')).toBe(seconds(NEWEST));
      expect(await mtime('/EMPTY')).toBe(seconds(EMPTY_MADE));
      expect(await mtime('/DEST/a')).toBe(seconds(FILES['a/b/new.bin']!));
      expect(await mtime('/DEST/x')).toBe(seconds(FILES['x/f.bin']!));
      const listed = async (p: string) =>
        Object.fromEntries(
          (await call<Array<{ filename: string; attrs: { mtime: number } }>>((done) => sftp.readdir(p, done))).map(
            (e) => [e.filename, e.attrs.mtime],
          ),
        );
      expect(await listed('/')).toEqual({ DEST: seconds(NEWEST), EMPTY: seconds(EMPTY_MADE) });
      expect(await listed('/DEST/a')).toEqual({
        b: seconds(FILES['a/b/new.bin']!),
        'old.bin': seconds(FILES['a/old.bin']!),
      });
      const handle = await call<Buffer>((done) => sftp.opendir('/DEST/c', done));
      expect((await call<{ mtime: number }>((done) => sftp.fstat(handle, done))).mtime).toBe(
        seconds(FILES['c/only.bin']!),
      );
      await call((done) => sftp.close(handle, done));
    } finally {
      client.end();
    }
  });

  it("shows folders' dates in OpenSSH sftp's ls -l", needs('sftp'), async () => {
    const file = path.join(s.work, 'ls-batch');
    fs.writeFileSync(file, 'ls -l /\nls -l /DEST\n');
    const r = await tool('sftp', [...s.sshOptions(key.file), '-b', file, 'alice@127.0.0.1'], { cwd: s.work });
    expect(r.code, r.stderr).toBe(0);
    const out = r.stdout.toString();
    expect(out).toMatch(/^dr-xr-xr-x .* Jan {2}1 {2}2023 DEST$/m);
    expect(out).toMatch(/^dr-xr-xr-x .* May {2}6 {2}2019 EMPTY$/m);
    expect(out).toMatch(/^dr-xr-xr-x .* Jun {2}7 {2}2022 a$/m);
    expect(out).toMatch(/^dr-xr-xr-x .* Jan {2}2 {2}2020 c$/m);
    expect(out).not.toMatch(/1970/);
  });

  it("gives rclone's sftp remote the folders' times", needs('rclone'), async () => {
    const env = rcloneSftpEnv(s.sftp.port, 'alice', key.file);
    const r = await tool('rclone', ['lsjson', '--dirs-only', '-R', 'portal:'], { env });
    expect(r.code, r.stderr).toBe(0);
    const dirs = Object.fromEntries(
      (JSON.parse(r.stdout.toString()) as Array<{ Path: string; ModTime: string }>).map((e) => [
        e.Path,
        new Date(e.ModTime).toISOString().replace('.000', ''),
      ]),
    );
    expect(dirs).toMatchObject({
      DEST: NEWEST,
      EMPTY: EMPTY_MADE,
      'DEST/a': FILES['a/b/new.bin'],
      'DEST/a/b': FILES['a/b/new.bin'],
      'DEST/c': FILES['c/only.bin'],
    });
  });
});
