import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataFiles, portalTraffic } from '../../db/schema.ts';
import { eventually } from '../support/engine.ts';
import { basic } from '../support/harness.ts';
import { scaled } from '../support/time.ts';
import { needs } from '../support/tools.ts';
import {
  bytesOf,
  eventFields,
  eventLines,
  incomingUser,
  md5,
  type PortalScene,
  portalScene,
  putFile,
  tool,
} from './support.ts';

/**
 * Downloads and listings of the portal with the tools people use: curl, wget and rclone against a
 * real HTTPS port, on the suite's database.
 */
let s: PortalScene;
const files = new Map<string, Buffer>();
const AUTH = ['-u', 'alice:Secret-1'];
const auth = basic('alice', 'Secret-1');
let curlBase: string[];
let a: { id: number; bytes: Buffer };

beforeAll(async () => {
  s = await portalScene();
  const { h, admin } = s;
  await h.addDestination('DEST');
  await h.addDestination('EMPTY');
  await incomingUser(h, admin, { id: 'alice', password: 'Secret-1' }, ['DEST', 'EMPTY']);
  await incomingUser(h, admin, { id: 'plain', password: 'Secret-2' }, ['DEST']);
  await h.ports.repos.portal.revoke('plain', ['size', 'mtime']);
  await incomingUser(h, admin, { id: 'thrifty', password: 'Secret-3' }, ['DEST']);
  await h.ports.repos.portal.setOption('thrifty', 'portal.maxDownloadBytes', '1000');
  const layout: Array<[string, number]> = [
    ['a.txt', 1000],
    ['sub/b.bin', 5000],
    ['sub/deep/c.bin', 3000],
    ['sub/name with spaces & ü.bin', 10],
    ['big.bin', 8 * 1024 * 1024],
    ['gone.bin', 100],
    ['changed.bin', 100],
    ['empty.bin', 0],
  ];
  for (const [i, [target, size]] of layout.entries()) {
    const put = await putFile(h, admin, s.sources, 'DEST', target, bytesOf(size, i + 1));
    files.set(target, put.bytes);
    if (target === 'a.txt') a = put;
  }
  for (let i = 0; i < 5; i++) await putFile(h, admin, s.sources, 'DEST', `many/f${i}`, bytesOf(10, 100 + i));
  await putFile(h, admin, s.sources, 'DEST', 'many/dir/x', bytesOf(10, 200));
  // A delivery measured a.txt: its MD5 is the entity tag.
  await h.db
    .update(dataFiles)
    .set({ checksum: md5(a.bytes) })
    .where(eq(dataFiles.id, a.id));
  curlBase = ['-sSk', ...AUTH];
}, scaled(60_000));
afterAll(() => s?.close());

const url = (p: string) => `${s.url}/portal/data/DEST/${p}`;
const inh = () => eventLines(s.h, 'INH').map(eventFields);
const headersOf = (text: string) =>
  Object.fromEntries(
    text
      .split('\r\n')
      .filter((l) => l.includes(':'))
      .map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );

describe('curl', () => {
  it('HEAD: length, validators, Accept-Ranges, no Content-Range, no INH line', needs('curl'), async () => {
    const before = inh().length;
    const r = await tool('curl', [...curlBase, '-I', url('a.txt')]);
    const text = r.stdout.toString();
    expect(text).toMatch(/^HTTP\/1\.1 200/);
    const headers = headersOf(text);
    const [file] = await s.h.db.select().from(dataFiles).where(eq(dataFiles.id, a.id));
    expect(headers).toMatchObject({
      'content-length': '1000',
      'accept-ranges': 'bytes',
      etag: `"${md5(a.bytes)}"`,
      'last-modified': new Date(Math.floor(file!.createdAt.getTime() / 1000) * 1000).toUTCString(),
    });
    expect(headers['content-range']).toBeUndefined();
    expect(Date.parse(headers['last-modified']!)).toBeLessThanOrEqual(Date.parse(headers.date!));
    expect(inh()).toHaveLength(before);
  });

  it('GET of a range: 206 with its Content-Range, and the INH line counts the bytes sent', needs('curl'), async () => {
    const out = path.join(s.work, 'range.part');
    const r = await tool('curl', [...curlBase, '-r', '100-199', '-D', '-', '-o', out, url('a.txt')]);
    const headers = headersOf(r.stdout.toString());
    expect(r.stdout.toString()).toMatch(/^HTTP\/1\.1 206/);
    expect(headers['content-range']).toBe('bytes 100-199/1000');
    expect(fs.readFileSync(out)).toEqual(a.bytes.subarray(100, 200));
    const line = inh().at(-1)!;
    expect(line).toMatchObject({
      DestinationName: 'DEST',
      FileName: 'a.txt',
      FileSize: '1000',
      BytesSent: '100',
      UserId: 'alice',
      CountryCode: 'gb',
      TransferProtocol: 'https',
      TransferServer: 'test',
      Action: 'download',
    });
  });

  it('-C - resumes a partial file to the whole, byte for byte', needs('curl'), async () => {
    const out = path.join(s.work, 'resumed.bin');
    const whole = files.get('sub/b.bin')!;
    fs.writeFileSync(out, whole.subarray(0, 1234));
    const r = await tool('curl', [...curlBase, '-C', '-', '-o', out, url('sub/b.bin')]);
    expect(r.code, r.stderr).toBe(0);
    expect(md5(fs.readFileSync(out))).toBe(md5(whole));
    expect(inh().at(-1)).toMatchObject({ FileName: 'sub/b.bin', BytesSent: String(5000 - 1234) });
  });

  it(
    'If-None-Match and If-Modified-Since answer 304, with no INH line; an older date gets the file',
    needs('curl'),
    async () => {
      const before = inh().length;
      const code = async (...args: string[]) =>
        (
          await tool('curl', [...curlBase, '-o', '/dev/null', '-w', '%{http_code}', ...args, url('a.txt')])
        ).stdout.toString();
      expect(await code('-H', `If-None-Match: "${md5(a.bytes)}"`)).toBe('304');
      expect(await code('-H', `If-None-Match: "other", W/"${md5(a.bytes)}"`)).toBe('304');
      expect(await code('-H', 'If-None-Match: *')).toBe('304');
      expect(await code('-z', new Date(Date.now() + 3600_000).toUTCString())).toBe('304');
      expect(inh()).toHaveLength(before);
      expect(await code('-z', 'Mon, 01 Jan 2001 00:00:00 GMT')).toBe('200');
      expect(await code('-H', 'Range: bytes=5000-')).toBe('416');
      expect(inh()).toHaveLength(before + 1);
    },
  );

  it('downloads an empty file, and asks a name for a download only with ?download=1', needs('curl'), async () => {
    const r = await tool('curl', [...curlBase, '-D', '-', '-o', '/dev/null', url('empty.bin')]);
    expect(headersOf(r.stdout.toString())['content-length']).toBe('0');
    expect(headersOf(r.stdout.toString())['content-disposition']).toBeUndefined();
    const named = await tool('curl', [
      ...curlBase,
      '-D',
      '-',
      '-o',
      '/dev/null',
      url('sub/name%20with%20spaces%20%26%20%C3%BC.bin?download=1'),
    ]);
    expect(headersOf(named.stdout.toString())['content-disposition']).toBe(
      `attachment; filename="name with spaces & _.bin"; filename*=UTF-8''name%20with%20spaces%20%26%20%C3%BC.bin`,
    );
  });
});

describe('wget', () => {
  const wget = ['--no-check-certificate', '--user=alice', '--password=Secret-1', '-q'];

  it('-N downloads once, sets the file time to Last-Modified, and then sees nothing newer', needs('wget'), async () => {
    const dir = path.join(s.work, 'wget-n');
    fs.mkdirSync(dir);
    expect((await tool('wget', [...wget, '-N', url('a.txt')], { cwd: dir })).code).toBe(0);
    const local = path.join(dir, 'a.txt');
    expect(md5(fs.readFileSync(local))).toBe(md5(a.bytes));
    const [file] = await s.h.db.select().from(dataFiles).where(eq(dataFiles.id, a.id));
    expect(Math.floor(fs.statSync(local).mtimeMs / 1000)).toBe(Math.floor(file!.createdAt.getTime() / 1000));
    const before = inh().length;
    const verbose = wget.filter((w) => w !== '-q');
    // By If-Modified-Since (wget's default), then by a HEAD and its Last-Modified.
    const again = await tool('wget', [...verbose, '-N', url('a.txt')], { cwd: dir });
    expect(again.stderr).toMatch(/304 Not Modified/);
    expect(again.stderr).toMatch(/not modified on server\. Omitting download/);
    const byHead = await tool('wget', [...verbose, '-N', '--no-if-modified-since', url('a.txt')], { cwd: dir });
    expect(byHead.stderr).toMatch(/Server file no newer than local file .* -- not retrieving/);
    expect(inh()).toHaveLength(before);
  });

  it('-c continues a partial file', needs('wget'), async () => {
    const dir = path.join(s.work, 'wget-c');
    fs.mkdirSync(dir);
    const whole = files.get('sub/deep/c.bin')!;
    fs.writeFileSync(path.join(dir, 'c.bin'), whole.subarray(0, 1000));
    expect((await tool('wget', [...wget, '-c', url('sub/deep/c.bin')], { cwd: dir })).code).toBe(0);
    expect(md5(fs.readFileSync(path.join(dir, 'c.bin')))).toBe(md5(whole));
    expect(inh().at(-1)).toMatchObject({ FileName: 'sub/deep/c.bin', BytesSent: '2000' });
  });

  it('-r walks the HTML listing and brings every file of the directory, byte for byte', needs('wget'), async () => {
    const dir = path.join(s.work, 'wget-r');
    fs.mkdirSync(dir);
    const r = await tool('wget', [...wget, '-r', '-np', '-nH', '--cut-dirs=4', '-R', 'index.html*', url('sub/')], {
      cwd: dir,
    });
    expect(r.code, r.stderr).toBe(0);
    const got = fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    const names = got.map((e) => path.relative(dir, path.join(e.parentPath, e.name))).sort();
    expect(names).toEqual(['b.bin', 'deep/c.bin', 'name with spaces & ü.bin']);
    for (const name of names)
      expect(md5(fs.readFileSync(path.join(dir, name))), name).toBe(md5(files.get(`sub/${name}`)!));
  });
});

describe('rclone (http remote)', needs('rclone'), () => {
  const rclone = (...args: string[]) =>
    tool('rclone', [
      ...args,
      '--http-url',
      url('sub/'),
      '--header',
      `Authorization: ${auth}`,
      '--no-check-certificate',
      '--config',
      '/dev/null',
    ]);

  it('lists with lsjson and copies the tree, byte for byte', async () => {
    const listed = await rclone('lsjson', '-R', ':http:');
    expect(listed.code, listed.stderr).toBe(0);
    const entries = (JSON.parse(listed.stdout.toString()) as Array<{ Path: string; Size: number; IsDir: boolean }>)
      .map((e) => [e.Path, e.IsDir ? 'dir' : e.Size])
      .sort();
    expect(entries).toEqual([
      ['b.bin', 5000],
      ['deep', 'dir'],
      ['deep/c.bin', 3000],
      ['name with spaces & ü.bin', 10],
    ]);
    const out = path.join(s.work, 'rclone');
    const copied = await rclone('copy', ':http:', out);
    expect(copied.code, copied.stderr).toBe(0);
    for (const name of ['b.bin', 'deep/c.bin', 'name with spaces & ü.bin']) {
      expect(md5(fs.readFileSync(path.join(out, name))), name).toBe(md5(files.get(`sub/${name}`)!));
    }
  });
});

describe('listings', () => {
  const list = (p: string, accept: string, who = auth) =>
    s.h.call('GET', `/portal/data/${p}`, { auth: who, headers: { accept } });

  it('lists one directory per destination, then files and directories by path', async () => {
    // A directory's time is its newest file's; a destination with none, its creation's.
    const time = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect((await list('', 'application/json')).json).toEqual([
      { name: 'DEST', type: 'directory', size: null, lastModified: time },
      { name: 'EMPTY', type: 'directory', size: null, lastModified: time },
    ]);
    const sub = await list('DEST/sub/', 'application/json');
    expect(sub.json).toEqual([
      {
        name: 'b.bin',
        type: 'file',
        size: 5000,
        lastModified: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      },
      { name: 'deep', type: 'directory', size: null, lastModified: time },
      { name: 'name with spaces & ü.bin', type: 'file', size: 10, lastModified: expect.any(String) },
    ]);
    expect((await list('EMPTY/', 'application/json')).json).toEqual([]);
    const csv = await list('DEST/sub/', 'text/csv');
    expect(csv.text.split('\r\n')).toEqual([
      'name,type,size,lastModified',
      `b.bin,file,5000,${sub.json[0].lastModified}`,
      `deep,directory,,${sub.json[1].lastModified}`,
      `name with spaces & ü.bin,file,10,${sub.json[2].lastModified}`,
      '',
    ]);
  });

  it('shows size and time only to a user with the size and mtime permissions', async () => {
    const r = await list('DEST/sub/', 'application/json', basic('plain', 'Secret-2'));
    expect(r.json[0]).toEqual({ name: 'b.bin', type: 'file', size: null, lastModified: null });
    const html = await list('DEST/sub/', 'text/html', basic('plain', 'Secret-2'));
    expect(html.text).not.toContain('5000');
    expect(html.text).not.toMatch(/<time/);
  });

  it('has plain relative links, breadcrumbs, sizes and ISO times in HTML', async () => {
    const r = await list('DEST/sub/', 'text/html');
    expect(r.status).toBe(200);
    expect(r.text).toContain('<a href="b.bin">b.bin</a>');
    expect(r.text).toContain('<a href="deep/">deep/</a>');
    expect(r.text).toContain('<a href="name%20with%20spaces%20%26%20%C3%BC.bin">name with spaces &amp; ü.bin</a>');
    expect(r.text).toContain('<a href="../">../</a>');
    expect(r.text).toMatch(
      /<a href="\/portal\/data\/">Data<\/a> \/ <a href="\/portal\/data\/DEST\/">DEST<\/a> \/ <a href="\/portal\/data\/DEST\/sub\/">sub<\/a>/,
    );
    // The exact size and time in attributes (for the hover and the page's script), short in the text.
    expect(r.text).toMatch(
      /<td class="size" data-bytes="5000" title="5,000 bytes">4\.9 KiB<\/td><td class="date"><time datetime="[^"]+Z"/,
    );
  });

  it('pages with ?limit and ?after: a Link header for JSON and CSV, a Next page link in HTML', async () => {
    const names: string[] = [];
    let next: string | null = '/portal/data/DEST/many/?limit=2';
    while (next !== null) {
      const r = await s.h.call('GET', next, { auth, headers: { accept: 'application/json' } });
      expect(r.status).toBe(200);
      names.push(...r.json.map((e: { name: string }) => e.name));
      next = /^<([^>]+)>; rel="next"$/.exec(r.headers.get('link') ?? '')?.[1] ?? null;
    }
    expect(names).toEqual(['dir', 'f0', 'f1', 'f2', 'f3', 'f4']);
    // A directory's cursor carries its '/'.
    const csv = await s.h.call('GET', '/portal/data/DEST/many/?limit=1', { auth, headers: { accept: 'text/csv' } });
    expect(csv.text).toMatch(/^name,type,size,lastModified\r\ndir,directory,,\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\r\n$/);
    expect(csv.headers.get('link')).toBe('</portal/data/DEST/many/?after=dir%2F&limit=1>; rel="next"');
    const html = await s.h.call('GET', '/portal/data/DEST/many/?limit=3&after=f0', { auth });
    expect(html.text).toContain('<a rel="next" href="/portal/data/DEST/many/?after=f3&amp;limit=3">Next page</a>');
    const last = await s.h.call('GET', '/portal/data/DEST/many/?after=f3', {
      auth,
      headers: { accept: 'application/json' },
    });
    expect(last.json.map((e: { name: string }) => e.name)).toEqual(['f4']);
    expect(last.headers.get('link')).toBeNull();
    for (const limit of ['0', '10001', 'x']) {
      expect((await s.h.call('GET', `/portal/data/DEST/many/?limit=${limit}`, { auth })).status).toBe(400);
    }
  });

  it("sends a directory's URL without its slash to the one with it", async () => {
    for (const [from, to] of [
      ['/portal/data', '/portal/data/'],
      ['/portal/data/DEST', '/portal/data/DEST/'],
      ['/portal/data/DEST/sub?limit=5', '/portal/data/DEST/sub/?limit=5'],
    ]) {
      const r = await s.h.call('GET', from!, { auth });
      expect([r.status, r.headers.get('location')], from).toEqual([301, to]);
    }
  });
});

describe('accounting and limits', () => {
  it("adds the bytes sent to the user's traffic", async () => {
    const rows = await s.h.db.select().from(portalTraffic).where(eq(portalTraffic.userId, 'alice'));
    const sent = inh()
      .filter((l) => l.UserId === 'alice')
      .reduce((sum, l) => sum + Number(l.BytesSent), 0);
    expect(rows.reduce((sum, r) => sum + r.downloadBytes, 0)).toBe(sent);
    expect(rows.every((r) => r.protocol === 'https')).toBe(true);
  });

  it("labels the portal's requests `portal` in /metrics, never by their paths", async () => {
    const metrics = (await s.h.call('GET', '/metrics', { auth: s.admin })).text;
    expect(metrics).toMatch(/^ecpds_http_requests_total\{service="portal",status="200"\} \d+$/m);
    expect(metrics).not.toContain('a.txt');
  });

  it('counts the bytes sent so far when the client goes away, and frees its connection', async () => {
    const before = inh().length;
    await new Promise<void>((resolve, reject) => {
      const req = https.get(url('big.bin'), { rejectUnauthorized: false, headers: { authorization: auth } }, (res) => {
        expect(res.statusCode).toBe(200);
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', (e) => (req.destroyed ? undefined : reject(e)));
    });
    const line = await eventually(async () => (inh().length > before ? inh().at(-1) : undefined), 10_000, 'INH line');
    expect(line).toMatchObject({ FileName: 'big.bin', FileSize: String(8 * 1024 * 1024) });
    expect(Number(line.BytesSent)).toBeGreaterThan(0);
    expect(Number(line.BytesSent)).toBeLessThan(8 * 1024 * 1024);
    await eventually(async () =>
      (await s.h.ports.repos.portal.connections('alice', new Date())) === 0 ? true : undefined,
    );
  });

  it('refuses with 429 once the download quota is spent', async () => {
    const thrifty = basic('thrifty', 'Secret-3');
    expect((await s.h.call('GET', '/portal/data/DEST/a.txt', { auth: thrifty })).status).toBe(200);
    const refused = await s.h.call('GET', '/portal/data/DEST/a.txt', { auth: thrifty });
    expect([refused.status, refused.text]).toEqual([429, 'Login failed']);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(eventLines(s.h, 'DEA').map(eventFields).at(-1)).toMatchObject({
      UserId: 'thrifty',
      Message: 'Download quota exceeded',
    });
  });

  it('answers 502 for a source that is gone or changed, logs why, and writes no INH line', needs('curl'), async () => {
    fs.rmSync(path.join(s.sources, 'DEST', 'gone.bin'));
    fs.appendFileSync(path.join(s.sources, 'DEST', 'changed.bin'), 'more');
    const before = inh().length;
    const gone = await tool('curl', [...curlBase, '-w', '%{http_code}', '-o', '-', url('gone.bin')]);
    expect(gone.stdout.toString()).toBe('gone.bin cannot be downloaded now: its data is not available502');
    const changed = await s.h.call('GET', '/portal/data/DEST/changed.bin', { auth });
    expect([changed.status, changed.text]).toEqual([
      502,
      'changed.bin cannot be downloaded now: its data changed since it was registered',
    ]);
    expect(inh()).toHaveLength(before);
    const warnings = s.h.logLines.map((l) => JSON.parse(l)).filter((l) => l.msg.startsWith('portal download refused'));
    expect(warnings.map((w) => [w.path, w.size ?? null])).toEqual([
      ['gone.bin', null],
      ['changed.bin', 104],
    ]);
    expect(await s.h.ports.repos.portal.connections('alice', new Date())).toBe(0);
  });

  it('answers 502 for a file whose source is an R2 object, which only a Worker reads, and logs why', async () => {
    // Registered by a Worker sharing the database (a Node instance refuses such a source): written directly.
    const now = s.h.ports.clock();
    await s.h.ports.repos.dataFiles.register(
      {
        source: 'r2://ECPDS_SOURCES/fc.grib',
        size: 10,
        registeredBy: 'edge',
        comment: 'Registered by edge',
        retrieve: false,
      },
      {
        destination: 'DEST',
        target: 'from-r2.grib',
        uniqueName: '',
        priority: 99,
        status: 'WAIT',
        standby: false,
        scheduledAt: now,
        expiresAt: new Date(now.getTime() + 3_600_000),
        metadata: [],
      },
    );
    const before = inh().length;
    const r = await s.h.call('GET', '/portal/data/DEST/from-r2.grib', { auth });
    expect([r.status, r.text]).toEqual([502, 'from-r2.grib cannot be downloaded now: its data is not available']);
    expect(inh()).toHaveLength(before);
    const warning = s.h.logLines.map((l) => JSON.parse(l)).findLast((l) => l.path === 'from-r2.grib');
    expect(warning).toMatchObject({
      msg: 'portal download refused: its source cannot be read',
      reason: 'Source r2://ECPDS_SOURCES/fc.grib not allowed: R2 sources are read by Workers only',
    });
  });
});
