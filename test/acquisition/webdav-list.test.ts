import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostConnection, TransferMethod } from '../../core/dissemination/methods.ts';
import { webdavMethod } from '../../functions/transfer-methods/webdav.ts';
import { davExtMissing, type NginxIndex, startNginxIndex } from '../support/servers/nginx-index.ts';
import { type SlowProxy, startSlowProxy } from '../support/servers/slow-proxy.ts';
import { hostFor } from '../support/transfer.ts';

const md5 = (bytes: Buffer | Uint8Array) => createHash('md5').update(bytes).digest('hex');

/** An Acquisition host's directory listed over WebDAV (PROPFIND, `Depth: 1`), against nginx and its dav-ext module. */
const missing = davExtMissing();
const live = () => new AbortController().signal;
const auth = { user: 'ecpds', password: 'pä ss!' };

describe.skipIf(missing !== null)(`listing over webdav${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let dav: NginxIndex;
  let proxy: SlowProxy;
  const method: TransferMethod = webdavMethod();
  /** As an acquisition run connects: the host's directory left out, the listed one given whole. */
  const host = (options: Record<string, string> = {}, password = auth.password, port = dav.port): HostConnection =>
    hostFor(
      'webdav',
      { hostname: `127.0.0.1:${port}`, login: auth.user, password, directory: '' },
      { 'webdav.scheme': 'http', ...options },
    );
  const plant = (relative: string, content: string | Buffer, time?: Date) => {
    const file = path.join(dav.root, relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
    if (time) fs.utimesSync(file, time, time);
  };
  beforeAll(async () => {
    dav = await startNginxIndex({ propfind: true, auth });
    proxy = await startSlowProxy(dav.port);
    proxy.stallAfterBytes = 0;
  });
  afterAll(async () => {
    await method.close();
    await proxy?.stop();
    await dav?.stop();
  });

  it('lists the members with their size and time, collections as directories, names decoded', async () => {
    const time = new Date('2026-01-02T03:04:05.678Z');
    plant('in/d ir/a.grib2', Buffer.alloc(1234), time);
    plant('in/d ir/b & c é.bin', 'hello', time);
    fs.mkdirSync(path.join(dav.root, 'in/d ir/sub'));
    const entries = await method.list!(host(), 'in/d ir', live());
    const byName = Object.fromEntries(entries.map((e) => [e.name, e]));
    expect(Object.keys(byName).sort()).toEqual(['a.grib2', 'b & c é.bin', 'sub']);
    expect(byName['a.grib2']).toMatchObject({ type: 'file', size: 1234 });
    // HTTP dates are to the second.
    expect(byName['a.grib2']!.time!.getTime()).toBe(Math.floor(time.getTime() / 1000) * 1000);
    expect(byName['b & c é.bin']).toMatchObject({ type: 'file', size: 5 });
    expect(byName.sub).toMatchObject({ type: 'directory', size: null });
    const absolute = await method.list!(host(), '/in/d ir/', live());
    expect(absolute.map((e) => e.name).sort()).toEqual(['a.grib2', 'b & c é.bin', 'sub']);
  });

  it('lists under webdav.path, and what it lists is read back by fetch at `<directory>/<name>`', async () => {
    plant('base/x/y/read me.bin', 'the bytes');
    const h = host({ 'webdav.path': '/base' });
    expect((await method.list!(h, 'x', live())).map((e) => e.name)).toEqual(['y']);
    expect(await method.list!(h, '', live())).toEqual([expect.objectContaining({ name: 'x', type: 'directory' })]);
    const [entry] = await method.list!(h, 'x/y', live());
    expect(entry).toMatchObject({ name: 'read me.bin', type: 'file', size: 9 });
    const { stream } = await method.fetch!(h, `x/y/${entry!.name}`, live());
    const read: Buffer[] = [];
    for await (const chunk of stream) read.push(Buffer.from(chunk));
    expect(md5(Buffer.concat(read))).toBe(md5(Buffer.from('the bytes')));
  });

  it('an empty collection lists nothing; a file is no directory', async () => {
    fs.mkdirSync(path.join(dav.root, 'empty'), { recursive: true });
    expect(await method.list!(host(), 'empty', live())).toEqual([]);
    plant('one/file.bin', 'f');
    await expect(method.list!(host(), 'one/file.bin', live())).rejects.toThrow(
      'Cannot list one/file.bin (not a directory)',
    );
  });

  it('a missing directory fails with its name; a wrong password never shows in the reason', async () => {
    await expect(method.list!(host(), '/no/such/place', live())).rejects.toThrow('No such directory /no/such/place');
    const wrong = 'not-the-password-123';
    const failure = await method.list!(host({}, wrong), 'in', live()).catch((e: Error) => e);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(
      /^Cannot list in \(WebDAV PROPFIND http:\/\/127\.0\.0\.1:\d+\/in\/ .*401/,
    );
    expect((failure as Error).message).not.toContain(wrong);
    expect((failure as Error).message).not.toContain(auth.password);
  });

  it('a server that does not answer PROPFIND fails with its status', async () => {
    const plain = await startNginxIndex();
    try {
      fs.mkdirSync(path.join(plain.root, 'in'));
      await expect(method.list!(host({}, auth.password, plain.port), 'in', live())).rejects.toThrow(
        /Cannot list in \(WebDAV PROPFIND .* failed: 405/,
      );
    } finally {
      await plain.stop();
    }
  });

  it('an aborted listing rejects with the reason, at once when it waits for the server', async () => {
    const controller = new AbortController();
    controller.abort(new Error('run cut at maximumDuration'));
    await expect(method.list!(host(), 'in', controller.signal)).rejects.toThrow('maximumDuration');

    const stalled = new AbortController();
    const listing = method.list!(host({}, auth.password, proxy.port), 'in', stalled.signal);
    setTimeout(() => stalled.abort(new Error('run cut while listing')), 200);
    const started = Date.now();
    await expect(listing).rejects.toThrow('run cut while listing');
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
