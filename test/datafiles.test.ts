import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataFiles, dataTransfers } from '../db/schema.ts';
import { nodeSourceProber } from '../functions/node/sources.ts';
import { createHarness, type Harness } from './support/harness.ts';

const NOW = new Date('2030-01-01T00:00:00.000Z');
const HOUR = 3_600_000;
let h: Harness;
let admin: string;
let root: string;
let outside: string;
let port: number;
let server: http.Server;
const hits: string[] = [];

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-root-')));
  outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-outside-')));
  fs.writeFileSync(path.join(root, 'a.bin'), Buffer.alloc(1234, 7));
  fs.writeFileSync(path.join(root, 'empty.bin'), '');
  fs.mkdirSync(path.join(root, 'sub'));
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'link-out'));
  fs.symlinkSync(outside, path.join(root, 'dir-out'));
  fs.symlinkSync(path.join(root, 'a.bin'), path.join(root, 'link-in'));
  server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    const url = req.url!.split('?')[0];
    if (url === '/file.grib')
      return void res
        .writeHead(200, { 'content-length': '4321' })
        .end(req.method === 'HEAD' ? undefined : Buffer.alloc(4321));
    if (url === '/hop') return void res.writeHead(302, { location: '/file.grib' }).end();
    if (url === '/out') return void res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
    if (url === '/ranged' && req.method === 'HEAD') return void res.writeHead(200).end();
    if (url === '/ranged' && req.headers.range === 'bytes=0-0')
      return void res.writeHead(206, { 'content-range': 'bytes 0-0/98765' }).end('x');
    if (url === '/hang') return; // never answers
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  h = await createHarness({ sourceRoots: [root], sourceHosts: [`127.0.0.1:${port}`] });
  h.ports.clock = () => NOW;
  admin = await h.client('admin', ['.*']);
  await h.addDestination('DEST');
});
afterAll(async () => {
  server.closeAllConnections();
  server.close();
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

const put = (q: Record<string, string>, auth = admin) =>
  h.call('GET', `/v1/datafile/put?${new URLSearchParams({ destination: 'DEST', ...q })}`, { auth });
const idOf = async (q: Record<string, string>) => {
  const r = await put(q);
  expect(r.status, r.text).toBe(200);
  expect(r.text).toMatch(/^\{"status":"ok","id":\d+\}$/);
  return r.json.id as number;
};
const transfer = async (id: number) =>
  (await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, id)))[0]!;
const counts = async () => ({
  files: (await h.db.select({ n: count() }).from(dataFiles))[0]!.n,
  transfers: (await h.db.select({ n: count() }).from(dataTransfers))[0]!.n,
});
const error = (message: string) => ({ status: 'error', message });

describe('datafile/put, size, del', () => {
  it('registers a local file with its size in bytes and the defaults of wire-decisions §10', async () => {
    const id = await idOf({ source: path.join(root, 'a.bin') });
    const [file] = await h.db.select().from(dataFiles).where(eq(dataFiles.id, id));
    expect(file).toMatchObject({
      source: path.join(root, 'a.bin'),
      size: 1234,
      registeredBy: 'admin',
      deletedAt: null,
    });
    expect(await transfer(id)).toMatchObject({
      destination: 'DEST',
      target: 'a.bin',
      uniqueName: '',
      priority: 99,
      status: 'WAIT',
      standby: false,
      scheduledAt: NOW,
      expiresAt: new Date(NOW.getTime() + 48 * HOUR),
      metadata: [],
    });
    const size = await h.call('GET', `/v1/datafile/size?id=${id}`, { auth: admin });
    expect(size.text).toBe('{"status":"ok","size":1234}');
    const del = await h.call('DELETE', `/v1/datafile/del?id=${id}`, { auth: admin });
    expect(del.text).toBe('{"status":"ok"}');
    expect((await h.db.select().from(dataFiles).where(eq(dataFiles.id, id)))[0]!.deletedAt).not.toBeNull();
    expect((await transfer(id)).status).toBe('STOP');
    const again = await h.call('DELETE', `/v1/datafile/del?id=${id}`, { auth: admin });
    expect([again.status, again.json]).toEqual([500, error('Already deleted')]);
    // a deleted transfer no longer holds the unique key
    expect(await idOf({ source: path.join(root, 'a.bin') })).not.toBe(id);
  });

  it('accepts an empty file, a symlink that stays inside the root and a file: URL', async () => {
    expect(
      (
        await h.call('GET', `/v1/datafile/size?id=${await idOf({ source: path.join(root, 'empty.bin') })}`, {
          auth: admin,
        })
      ).json.size,
    ).toBe(0);
    const viaLink = await idOf({ source: path.join(root, 'link-in'), target: 'linked.bin' });
    expect((await h.db.select().from(dataFiles).where(eq(dataFiles.id, viaLink)))[0]!.size).toBe(1234);
    expect((await transfer(await idOf({ source: `file://${root}/a.bin`, uniquename: 'url' }))).target).toBe('a.bin');
  });

  it('size and del of an unknown id; a non-integer id is 400; a missing one 412', async () => {
    for (const [method, p] of [
      ['GET', '/v1/datafile/size'],
      ['DELETE', '/v1/datafile/del'],
    ] as const) {
      const r = await h.call(method, `${p}?id=987654`, { auth: admin });
      expect([r.status, r.json]).toEqual([500, error('DataFile 987654 not found')]);
      expect((await h.call(method, `${p}?id=x1`, { auth: admin })).text).toBe(
        "Invalid value for parameter id: 'x1' (integer expected)",
      );
      expect((await h.call(method, p, { auth: admin })).text).toBe('Missing parameter: id');
    }
    expect((await h.call('GET', '/v1/datafile/put?destination=DEST', { auth: admin })).text).toBe(
      'Missing parameter: source',
    );
  });
});

describe('sources that must be refused, with nothing stored', () => {
  it.each([
    ['a .. escape', () => `${root}/../${path.basename(outside)}/secret.txt`, "an absolute path without '..' expected"],
    ['a .. that stays inside', () => `${root}/sub/../a.bin`, "an absolute path without '..' expected"],
    ['a symlink leaving the root', () => `${root}/link-out`, 'outside the configured source roots'],
    [
      'a file under a symlinked directory outside',
      () => `${root}/dir-out/secret.txt`,
      'outside the configured source roots',
    ],
    ['a directory', () => `${root}/sub`, 'not a regular file'],
    ['the root itself', () => root, 'not a regular file'],
    ['/dev/null', () => '/dev/null', 'outside the configured source roots'],
    ['/etc/passwd as a file URL', () => 'file:///etc/passwd', 'outside the configured source roots'],
    ['a relative path', () => 'a.bin', "an absolute path without '..' expected"],
    ['a missing file', () => `${root}/missing.bin`, 'not found'],
    ['a missing file outside every root', () => '/etc/nonexistent-ecpds-source', 'outside the configured source roots'],
    [
      'a missing file under a symlinked directory outside',
      () => `${root}/dir-out/missing.txt`,
      'outside the configured source roots',
    ],
    ['another scheme', () => `ftp://127.0.0.1:${port}/file.grib`, 'unsupported scheme'],
    ['a host not on the allow-list', () => `http://localhost:${port}/file.grib`, 'not allowed: localhost:'],
    [
      'the allowed host on another port',
      () => `http://127.0.0.1:1/file.grib`,
      '127.0.0.1:1 is not an allowed source host',
    ],
    [
      'a redirect to a host not on the list',
      () => `http://127.0.0.1:${port}/out`,
      '169.254.169.254 is not an allowed source host',
    ],
    ['an HTTP error', () => `http://127.0.0.1:${port}/nothing`, 'not reachable: HTTP 404'],
    [
      'an R2 object, which only a Worker reads',
      () => 'r2://ECPDS_SOURCES/fc.grib',
      'R2 sources are read by Workers only',
    ],
  ])('%s', async (_, source, reason) => {
    const before = await counts();
    const hitsBefore = hits.length;
    const r = await put({ source: source() });
    expect(r.status).toBe(500);
    expect(r.json.status).toBe('error');
    expect(r.json.message).toContain(`Source ${source()}`);
    expect(r.json.message).toContain(reason);
    expect(await counts()).toEqual(before);
    if (!/\/(out|nothing)$/.test(source())) expect(hits.length).toBe(hitsBefore);
  });

  it('tells nothing of which files exist outside the roots: one there and a missing one get the same answer', async () => {
    const answer = async (source: string) => {
      const r = await put({ source });
      return [r.status, r.json.message.replace(source, '<source>')];
    };
    const existing = await answer('/etc/shadow');
    expect(existing).toEqual([500, 'Source <source> not allowed: outside the configured source roots']);
    expect(await answer('/etc/nonexistent-ecpds-source')).toEqual(existing);
    expect(await answer('/etc/nonexistent-dir/shadow')).toEqual(existing);
  });

  it('refuses every local path when no roots are configured', async () => {
    const before = await counts();
    const saved = h.ports.sources;
    h.ports.sources = nodeSourceProber({ roots: [], hosts: [], timeoutMs: 300 });
    try {
      const r = await put({ source: path.join(root, 'a.bin') });
      expect(r.json).toEqual(
        error(`Source ${path.join(root, 'a.bin')} not allowed: no local source roots are configured`),
      );
      expect((await put({ source: `http://127.0.0.1:${port}/file.grib` })).json.message).toContain(
        'is not an allowed source host',
      );
    } finally {
      h.ports.sources = saved;
    }
    expect(await counts()).toEqual(before);
  });

  it('gives up on a server that never answers, after the timeout', async () => {
    const before = await counts();
    const saved = h.ports.sources;
    h.ports.sources = nodeSourceProber({ roots: [root], hosts: [`127.0.0.1:${port}`], timeoutMs: 300 });
    const started = Date.now();
    try {
      const r = await put({ source: `http://127.0.0.1:${port}/hang` });
      expect(r.json).toEqual(error(`Source http://127.0.0.1:${port}/hang not reachable: no answer within 300 ms`));
    } finally {
      h.ports.sources = saved;
    }
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await counts()).toEqual(before);
  });

  it('an unknown destination is refused before the source is probed', async () => {
    const before = await counts();
    const hitsBefore = hits.length;
    const r = await put({ destination: 'NOPE', source: `http://127.0.0.1:${port}/file.grib` });
    expect(r.json).toEqual(error('Destination NOPE not found'));
    expect(hits.length).toBe(hitsBefore);
    expect(await counts()).toEqual(before);
  });

  it.each([
    ['a local source that exists', () => ({ source: `${root}/a.bin` })],
    ['a missing local file', () => ({ source: `${root}/missing.bin` })],
    ['a local path outside the roots', () => ({ source: `${outside}/secret.txt` })],
    ['an expiry already past', () => ({ source: `${root}/a.bin`, at: '20200101000000' })],
    ['a start out of range', () => ({ source: `${root}/a.bin`, at: '+99999999d' })],
    ['no target to derive', () => ({ source: `${root}/` })],
    ['malformed metadata', () => ({ source: `${root}/a.bin`, metadata: 'novalue' })],
    ['an R2 source', () => ({ source: 'r2://ECPDS_SOURCES/fc.grib' })],
  ])('an unknown destination comes first, with %s', async (_, query) => {
    const before = await counts();
    const r = await put({ destination: 'NOPE', ...query() });
    expect([r.status, r.json]).toEqual([500, error('Destination NOPE not found')]);
    expect(await counts()).toEqual(before);
  });
});

describe('local sources under directories probed before: nothing is remembered', () => {
  const mutable = () => {
    const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-swap-')));
    fs.mkdirSync(path.join(base, 'root'));
    fs.mkdirSync(path.join(base, 'root', 'incoming'));
    fs.writeFileSync(path.join(base, 'root', 'incoming', 'f.bin'), Buffer.alloc(10));
    fs.writeFileSync(path.join(base, 'secret.bin'), Buffer.alloc(20));
    return base;
  };

  it('a file that is a link is resolved every time, also in a directory probed a moment ago', async () => {
    const base = mutable();
    try {
      const prober = nodeSourceProber({ roots: [path.join(base, 'root')], hosts: [], timeoutMs: 1000 });
      expect(await prober.probe(path.join(base, 'root', 'incoming', 'f.bin'))).toEqual({ size: 10 });
      fs.symlinkSync(path.join(base, 'secret.bin'), path.join(base, 'root', 'incoming', 'out.bin'));
      await expect(prober.probe(path.join(base, 'root', 'incoming', 'out.bin'))).rejects.toThrow(
        'outside the configured source roots',
      );
      fs.symlinkSync(path.join(base, 'root', 'incoming', 'f.bin'), path.join(base, 'root', 'incoming', 'in.bin'));
      expect(await prober.probe(path.join(base, 'root', 'incoming', 'in.bin'))).toEqual({ size: 10 });
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  const swapForLink = (base: string, dir: string, target: string) => {
    fs.rmSync(path.join(base, 'root', dir), { recursive: true });
    fs.symlinkSync(target, path.join(base, 'root', dir));
  };

  it('a directory replaced by a link that leaves the roots is refused at the next probe', async () => {
    const base = mutable();
    try {
      const prober = nodeSourceProber({ roots: [path.join(base, 'root')], hosts: [], timeoutMs: 1000 });
      expect(await prober.probe(path.join(base, 'root', 'incoming', 'f.bin'))).toEqual({ size: 10 });
      fs.mkdirSync(path.join(base, 'elsewhere'));
      fs.writeFileSync(path.join(base, 'elsewhere', 'f.bin'), Buffer.alloc(30));
      swapForLink(base, 'incoming', path.join(base, 'elsewhere'));
      await expect(prober.probe(path.join(base, 'root', 'incoming', 'f.bin'))).rejects.toThrow(
        'outside the configured source roots',
      );
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  it('a directory replaced by a link that stays inside the roots is followed at the next probe', async () => {
    const base = mutable();
    try {
      const prober = nodeSourceProber({ roots: [path.join(base, 'root')], hosts: [], timeoutMs: 1000 });
      expect(await prober.probe(path.join(base, 'root', 'incoming', 'f.bin'))).toEqual({ size: 10 });
      fs.mkdirSync(path.join(base, 'root', 'other'));
      fs.writeFileSync(path.join(base, 'root', 'other', 'f.bin'), Buffer.alloc(40));
      swapForLink(base, 'incoming', path.join(base, 'root', 'other'));
      expect(await prober.probe(path.join(base, 'root', 'incoming', 'f.bin'))).toEqual({ size: 40 });
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  it('a root replaced by a link is judged by where it leads now', async () => {
    const base = mutable();
    try {
      const prober = nodeSourceProber({ roots: [path.join(base, 'root')], hosts: [], timeoutMs: 1000 });
      expect(await prober.probe(path.join(base, 'root', 'incoming', 'f.bin'))).toEqual({ size: 10 });
      // The root now leads elsewhere: a file there is inside the (real) root, the old one is gone.
      fs.renameSync(path.join(base, 'root'), path.join(base, 'old-root'));
      fs.mkdirSync(path.join(base, 'new-root', 'incoming'), { recursive: true });
      fs.writeFileSync(path.join(base, 'new-root', 'incoming', 'f.bin'), Buffer.alloc(50));
      fs.symlinkSync(path.join(base, 'new-root'), path.join(base, 'root'));
      expect(await prober.probe(path.join(base, 'root', 'incoming', 'f.bin'))).toEqual({ size: 50 });
      await expect(prober.probe(path.join(base, 'old-root', 'incoming', 'f.bin'))).rejects.toThrow(
        'outside the configured source roots',
      );
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  it('a missing file or a directory in a known directory is refused', async () => {
    const base = mutable();
    try {
      const prober = nodeSourceProber({ roots: [path.join(base, 'root')], hosts: [], timeoutMs: 1000 });
      expect(await prober.probe(path.join(base, 'root', 'incoming', 'f.bin'))).toEqual({ size: 10 });
      await expect(prober.probe(path.join(base, 'root', 'incoming', 'gone.bin'))).rejects.toThrow('not found');
      fs.mkdirSync(path.join(base, 'root', 'incoming', 'd'));
      await expect(prober.probe(path.join(base, 'root', 'incoming', 'd'))).rejects.toThrow('not a regular file');
      await expect(prober.probe(`${path.join(base, 'root', 'incoming', 'f.bin')}/`)).rejects.toThrow('not found');
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });
});

describe('http(s) sources on the allow-list', () => {
  it('takes the size from HEAD content-length', async () => {
    const id = await idOf({ source: `http://127.0.0.1:${port}/file.grib?x=1` });
    expect((await h.call('GET', `/v1/datafile/size?id=${id}`, { auth: admin })).json.size).toBe(4321);
    expect((await transfer(id)).target).toBe('file.grib');
  });

  it('follows a redirect that stays on the list', async () => {
    const id = await idOf({ source: `http://127.0.0.1:${port}/hop`, target: 'hop.grib' });
    expect((await h.db.select().from(dataFiles).where(eq(dataFiles.id, id)))[0]!.size).toBe(4321);
  });

  it('without content-length, reads the size from a ranged GET', async () => {
    const id = await idOf({ source: `http://127.0.0.1:${port}/ranged` });
    expect((await h.call('GET', `/v1/datafile/size?id=${id}`, { auth: admin })).json.size).toBe(98765);
    expect(hits).toContain('GET /ranged');
  });
});

describe('unique key, force, standby, schedule, priority, metadata', () => {
  const src = () => path.join(root, 'a.bin');

  it('destination + target + uniquename is unique among live transfers; force requeues, same id', async () => {
    const id = await idOf({ source: src(), target: 'key.bin', uniquename: 'u1' });
    await h.db.update(dataTransfers).set({ status: 'DONE' }).where(eq(dataTransfers.dataFileId, id));
    const before = await counts();
    const dup = await put({ source: src(), target: 'key.bin', uniquename: 'u1' });
    expect([dup.status, dup.json]).toEqual([500, error(`DataFile already exists (DataFileId=${id})`)]);
    const forced = await put({ source: src(), target: 'key.bin', uniquename: 'u1', force: 'TRUE', priority: '5' });
    expect(forced.text).toBe(`{"status":"ok","id":${id}}`);
    expect(await counts()).toEqual(before);
    expect(await transfer(id)).toMatchObject({ status: 'WAIT', priority: 5, message: null });
    expect(await idOf({ source: src(), target: 'key.bin', uniquename: 'u2' })).not.toBe(id);
    expect(await idOf({ source: src(), target: 'other.bin', uniquename: 'u1' })).not.toBe(id);
    expect((await put({ source: src(), target: 'key.bin', uniquename: 'u1', force: 'yes' })).status).toBe(400);
  });

  it('two concurrent puts with the same key: exactly one succeeds', async () => {
    const before = await counts();
    const replies = await Promise.all([1, 2, 3].map(() => put({ source: src(), target: 'race.bin', uniquename: 'r' })));
    const ok = replies.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 200))
      expect(r.json).toEqual(error(`DataFile already exists (DataFileId=${ok[0]!.json.id})`));
    expect(await counts()).toEqual({ files: before.files + 1, transfers: before.transfers + 1 });
  });

  it('standby=true starts in HOLD, standby=false in WAIT', async () => {
    expect(await transfer(await idOf({ source: src(), target: 'hold.bin', standby: 'true' }))).toMatchObject({
      status: 'HOLD',
      standby: true,
    });
    expect(await transfer(await idOf({ source: src(), target: 'wait.bin', standby: 'False' }))).toMatchObject({
      status: 'WAIT',
      standby: false,
    });
  });

  it.each([
    ['2030-01-02T03:04:05Z', undefined, '2030-01-02T03:04:05Z', 48 * HOUR],
    ['2030-01-02T05:04:05+02:00', '36h', '2030-01-02T03:04:05Z', 36 * HOUR],
    ['2030-01-02T03:04:05', '90m', '2030-01-02T03:04:05Z', 90 * 60_000],
    ['20300102030405', '3', '2030-01-02T03:04:05Z', 3 * HOUR],
    ['+2h', '1w', '2030-01-01T02:00:00Z', 7 * 24 * HOUR],
    ['+45s', 'P1DT2H', '2030-01-01T00:00:45Z', 26 * HOUR],
    ['+1d', '30s', '2030-01-02T00:00:00Z', 30_000],
  ])('at=%s lifetime=%s', async (at, lifetime, scheduled, lifetimeMs) => {
    const id = await idOf({ source: src(), target: `at-${at}-${lifetime}`, at, ...(lifetime ? { lifetime } : {}) });
    const t = await transfer(id);
    expect(t.scheduledAt.toISOString()).toBe(new Date(scheduled).toISOString());
    expect(t.expiresAt.getTime() - t.scheduledAt.getTime()).toBe(lifetimeMs);
  });

  it('an expiry already past is refused and nothing is stored', async () => {
    const before = await counts();
    const cases: Array<Record<string, string>> = [
      { at: '20291230000000' },
      { at: '2029-12-31T23:00:00Z', lifetime: '1h' },
      { at: '2029-12-31T23:59:59Z', lifetime: '1s' },
    ];
    for (const q of cases) {
      const r = await put({ source: src(), target: 'late.bin', ...q });
      expect(r.status).toBe(500);
      expect(r.json.message).toMatch(/^Expiry time already passed/);
    }
    expect(await counts()).toEqual(before);
  });

  it.each([
    ['priority', '100', 'integer from 0 to 99 expected'],
    ['priority', '-1', 'integer from 0 to 99 expected'],
    ['priority', 'high', 'integer expected'],
    ['at', 'tomorrow', 'ISO 8601 date-time, yyyyMMddHHmmss or +<n><unit> expected'],
    ['at', '20301301000000', 'ISO 8601 date-time, yyyyMMddHHmmss or +<n><unit> expected'],
    ['at', '+5y', 'ISO 8601 date-time, yyyyMMddHHmmss or +<n><unit> expected'],
    ['at', '2030-02-30T00:00:00Z', 'ISO 8601 date-time, yyyyMMddHHmmss or +<n><unit> expected'],
    ['at', '+99999999d', 'ISO 8601 date-time, yyyyMMddHHmmss or +<n><unit> expected'],
    ['lifetime', '5y', '<n> with unit s, m, h, d or w, or an ISO 8601 duration expected'],
    ['lifetime', '999999999w', '<n> with unit s, m, h, d or w, or an ISO 8601 duration expected'],
    // Times the database cannot store: after the year 9999, or in the year 0.
    ['at', '+3000000d', 'ISO 8601 date-time, yyyyMMddHHmmss or +<n><unit> expected'],
    ['at', '00000101000000', 'ISO 8601 date-time, yyyyMMddHHmmss or +<n><unit> expected'],
    ['at', '0000-06-01T00:00:00Z', 'ISO 8601 date-time, yyyyMMddHHmmss or +<n><unit> expected'],
    ['lifetime', '3000000d', '<n> with unit s, m, h, d or w, or an ISO 8601 duration expected'],
  ])('400 for %s=%s', async (name, value, expected) => {
    const before = await counts();
    const r = await put({ source: src(), target: 'bad.bin', [name]: value });
    expect(r.status).toBe(400);
    expect(r.text).toBe(`Invalid value for parameter ${name}: '${value}' (${expected})`);
    expect(await counts()).toEqual(before);
  });

  it('the last storable day is kept', async () => {
    const t = await transfer(
      await idOf({ source: src(), target: 'last.bin', at: '9999-12-29T00:00:00Z', lifetime: '1d' }),
    );
    expect(t.expiresAt.toISOString()).toBe('9999-12-30T00:00:00.000Z');
  });

  it('priority 0 and 99 are kept; metadata k=v,k2=v2 is stored as ordered pairs', async () => {
    expect((await transfer(await idOf({ source: src(), target: 'p0.bin', priority: '0' }))).priority).toBe(0);
    expect((await transfer(await idOf({ source: src(), target: 'p99.bin', priority: '99' }))).priority).toBe(99);
    const id = await idOf({ source: src(), target: 'meta.bin', metadata: 'k=v,k2=v2=x, k3 = 3 ' });
    expect((await transfer(id)).metadata).toEqual([
      ['k', 'v'],
      ['k2', 'v2=x'],
      ['k3', '3'],
    ]);
    const before = await counts();
    expect((await put({ source: src(), target: 'meta2.bin', metadata: 'k=v,oops' })).json).toEqual(
      error("Malformed metadata: 'oops' (k=v expected)"),
    );
    expect(await counts()).toEqual(before);
  });
});

describe('permissions', () => {
  it('datafilePut, datafileSize and datafileDel are checked separately', async () => {
    const putter = await h.client('putter', ['datafilePut']);
    const reader = await h.client('reader', ['datafileSize|datafileDel']);
    const denied = error('User not authorized');
    const id = (await put({ source: path.join(root, 'a.bin'), target: 'perm.bin' }, putter)).json.id as number;
    expect(id).toBeGreaterThan(0);
    expect((await h.call('GET', `/v1/datafile/size?id=${id}`, { auth: putter })).json).toEqual(denied);
    expect((await h.call('DELETE', `/v1/datafile/del?id=${id}`, { auth: putter })).json).toEqual(denied);
    const before = await counts();
    expect((await put({ source: path.join(root, 'a.bin'), target: 'perm2.bin' }, reader)).json).toEqual(denied);
    expect(await counts()).toEqual(before);
    expect((await h.call('GET', `/v1/datafile/size?id=${id}`, { auth: reader })).json).toEqual({
      status: 'ok',
      size: 1234,
    });
    expect((await h.call('DELETE', `/v1/datafile/del?id=${id}`, { auth: reader })).json).toEqual({ status: 'ok' });
    expect((await h.db.select().from(dataFiles).where(eq(dataFiles.id, id)))[0]!.registeredBy).toBe('putter');
  });
});
