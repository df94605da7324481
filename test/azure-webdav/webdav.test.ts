import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptFence, type HostConnection } from '../../core/dissemination/methods.ts';
import { webdavBase, webdavMethod } from '../../functions/transfer-methods/webdav.ts';
import { freePort } from '../support/processes.ts';
import { type NginxDav, nginxAvailability, startNginxDav } from '../support/servers/nginx-dav.ts';
import { abortMidway, chunks, hostFor, md5, payload } from '../support/transfer.ts';

const nginx = nginxAvailability();
const never = () => new AbortController().signal;

describe('webdav: the base URL', () => {
  it('https by default, the host port or webdav.port, webdav.path in front', () => {
    expect(webdavBase(hostFor('webdav', { hostname: 'dav.example.org' }))).toBe('https://dav.example.org');
    const h = hostFor('webdav', { hostname: 'dav.example.org' }, { 'webdav.port': 8443, 'webdav.path': '/dav/a b/' });
    expect(webdavBase(h)).toBe('https://dav.example.org:8443/dav/a%20b');
    const p = hostFor('webdav', { hostname: 'h:8080' }, { 'webdav.scheme': 'http' });
    expect(webdavBase(p)).toBe('http://h:8080');
  });

  it('refuses a scheme other than http and https', () => {
    expect(() => webdavBase(hostFor('webdav', { hostname: 'h' }, { 'webdav.scheme': 'ftp' }))).toThrow(
      'webdav.scheme must be http or https, not ftp',
    );
  });
});

describe.skipIf(!nginx.run)(`webdav: delivering to nginx's dav module ${nginx.reason}`, () => {
  let dav: NginxDav;
  let secured: NginxDav;
  beforeAll(async () => {
    [dav, secured] = await Promise.all([startNginxDav(), startNginxDav({ user: 'ecpds', password: 'pä ss!' })]);
  });
  afterAll(async () => {
    await dav?.stop();
    await secured?.stop();
  });

  const host = (options: Record<string, string> = {}, over: Parameters<typeof hostFor>[1] = {}, server = dav) =>
    hostFor(
      'webdav',
      { hostname: `127.0.0.1:${server.port}`, directory: 'in/coming', ...over },
      { 'webdav.scheme': 'http', ...options },
    );
  const send = (h: HostConnection, target: string, bytes: Uint8Array, attempt?: ReturnType<typeof attemptFence>) =>
    webdavMethod().send(h, { target, size: bytes.byteLength, attempt }, chunks(bytes), never());
  const onServer = (p: string) => path.join(dav.root, p);
  const since = (n: number) => dav.requests().slice(n);
  // nginx logs a request after answering it, so a line can come a moment after the reply.
  const requestsFor = (name: string) =>
    dav.requests().filter((r) => r.method !== 'MKCOL' && r.path.startsWith(`/in/coming/${name}`));

  it('makes the missing collections, PUTs the temporary name, checks its size, then MOVEs it into place', async () => {
    const bytes = payload(700_000);
    const before = dav.requests().length;
    const fence = attemptFence(12, 1, async () => undefined);
    await expect(send(host(), 'x/a.grib', bytes, fence)).resolves.toEqual({ sent: 700_000, md5: md5(bytes) });
    expect(md5(fs.readFileSync(onServer('in/coming/x/a.grib')))).toBe(md5(bytes));
    expect(fs.readdirSync(onServer('in/coming/x'))).toEqual(['a.grib']);
    await expect
      .poll(() => since(before))
      .toEqual([
        { method: 'MKCOL', path: '/in/' },
        { method: 'MKCOL', path: '/in/coming/' },
        { method: 'MKCOL', path: '/in/coming/x/' },
        { method: 'PUT', path: '/in/coming/x/a.grib.12-1.tmp' },
        { method: 'HEAD', path: '/in/coming/x/a.grib.12-1.tmp' },
        { method: 'MOVE', path: '/in/coming/x/a.grib.12-1.tmp' },
      ]);
  });

  it('replaces a file already there (Overwrite: T), and removes what earlier attempts left', async () => {
    fs.mkdirSync(onServer('in/coming'), { recursive: true });
    fs.writeFileSync(onServer('in/coming/b.grib'), 'old');
    fs.writeFileSync(onServer('in/coming/b.grib.13-1.tmp'), 'half of attempt 1');
    const bytes = payload(10_000, 3);
    await send(
      host(),
      'b.grib',
      bytes,
      attemptFence(13, 2, async () => undefined),
    );
    expect(md5(fs.readFileSync(onServer('in/coming/b.grib')))).toBe(md5(bytes));
    expect(fs.existsSync(onServer('in/coming/b.grib.13-1.tmp'))).toBe(false);
  });

  it('never MOVEs once the database says the attempt lost the transfer: the final name keeps what it had', async () => {
    fs.mkdirSync(onServer('in/coming'), { recursive: true });
    fs.writeFileSync(onServer('in/coming/c.grib'), 'old');
    const before = dav.requests().length;
    const lost = attemptFence(14, 1, async () => {
      // The bytes are all there, under the temporary name only.
      expect(fs.statSync(onServer('in/coming/c.grib.14-1.tmp')).size).toBe(50_000);
      throw new Error('Transfer 14 is no longer this attempt');
    });
    await expect(send(host(), 'c.grib', payload(50_000), lost)).rejects.toThrow('no longer this attempt');
    expect(fs.readFileSync(onServer('in/coming/c.grib'), 'utf8')).toBe('old');
    expect(fs.existsSync(onServer('in/coming/c.grib.14-1.tmp'))).toBe(false);
    expect(since(before).map((r) => r.method)).not.toContain('MOVE');
  });

  it('webdav.usetmp false PUTs the final name, webdav.suffix names the temporary one', async () => {
    await send(host({ 'webdav.usetmp': 'no' }), 'd.grib', payload(100));
    await expect
      .poll(() => requestsFor('d.grib'))
      .toEqual([
        { method: 'PUT', path: '/in/coming/d.grib' },
        { method: 'HEAD', path: '/in/coming/d.grib' },
      ]);
    await send(host({ 'webdav.suffix': '.part', 'webdav.ignoreCheck': 'yes' }), 'e.grib', payload(100));
    await expect
      .poll(() => requestsFor('e.grib'))
      .toEqual([
        { method: 'PUT', path: '/in/coming/e.grib.part' },
        { method: 'MOVE', path: '/in/coming/e.grib.part' },
      ]);
    expect(fs.statSync(onServer('in/coming/e.grib')).size).toBe(100);
  });

  it('webdav.mkdirs false: a missing collection fails the PUT with the server answer', async () => {
    const error = await send(host({ 'webdav.mkdirs': 'no' }, { directory: 'nowhere' }), 'f', payload(10)).catch(
      (e: Error) => e.message,
    );
    expect(error).toMatch(/^WebDAV PUT http:\/\/127\.0\.0\.1:\d+\/nowhere\/f\.tmp failed: 500 Internal Server Error/);
    expect(fs.existsSync(onServer('nowhere'))).toBe(false);
  });

  it('a source that changed size stores nothing, under either name', async () => {
    const h = host({}, { directory: 'sized' });
    const sending = webdavMethod().send(h, { target: 'g', size: 5000 }, chunks(payload(4000)), never());
    await expect(sending).rejects.toThrow('Source changed size: 4000 bytes read, 5000 registered');
    const longer = webdavMethod().send(h, { target: 'g', size: 3000 }, chunks(payload(4000)), never());
    await expect(longer).rejects.toThrow('Source changed size: more than 3000 bytes read, 3000 registered');
    expect(fs.readdirSync(onServer('sized'))).toEqual([]);
  });

  it('an abort ends the upload at once, and leaves nothing', async () => {
    const h = host({}, { directory: 'aborted' });
    await abortMidway((source, signal) => webdavMethod().send(h, { target: 'h', size: 1_000_000 }, source, signal));
    expect(fs.readdirSync(onServer('aborted'))).toEqual([]);
  });

  it('Basic authentication from the host login; a refusal says so, without the password', async () => {
    const refused = await send(host({}, { login: 'ecpds', password: 'wrong' }, secured), 'i', payload(10)).catch(
      (e: Error) => e.message,
    );
    expect(refused).toMatch(/^WebDAV MKCOL http:\/\/127\.0\.0\.1:\d+\/in\/ failed: 401 Unauthorized/);
    expect(refused).not.toContain('wrong');
    const bytes = payload(2000);
    await send(host({}, { login: 'ecpds', password: 'pä ss!' }, secured), 'i', bytes);
    expect(md5(fs.readFileSync(path.join(secured.root, 'in/coming/i')))).toBe(md5(bytes));
  });

  it('a server that is not there fails with the reason', async () => {
    const port = await freePort();
    const h = hostFor('webdav', { hostname: `127.0.0.1:${port}` }, { 'webdav.scheme': 'http', 'webdav.mkdirs': 'no' });
    const error = await send(h, 'j', payload(10)).catch((e: Error) => e.message);
    expect(error).toBe(
      `WebDAV PUT http://127.0.0.1:${port}/j.tmp failed: connect ECONNREFUSED 127.0.0.1:${port} (ECONNREFUSED)`,
    );
  });
});
