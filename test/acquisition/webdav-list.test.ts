import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TransferMethod } from '../../core/dissemination/methods.ts';
import { webdavMethod } from '../../functions/transfer-methods/webdav.ts';
import { davExtMissing, startNginxIndex } from '../support/servers/nginx-index.ts';
import { bytesOf } from '../support/transfer.ts';
import { LISTING_AUTH as auth, live, webListing } from './support.ts';

const md5 = (bytes: Buffer | Uint8Array) => createHash('md5').update(bytes).digest('hex');

/** An Acquisition host's directory listed over WebDAV (PROPFIND, `Depth: 1`), against nginx and its dav-ext module. */
const missing = davExtMissing();

describe.skipIf(missing !== null)(`listing over webdav${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const method: TransferMethod = webdavMethod();
  const web = webListing(method, { propfind: true });
  const { plant } = web;
  const host = (options: Record<string, string> = {}, password?: string, port?: number) =>
    web.host('webdav', { 'webdav.scheme': 'http', ...options }, password, port);

  it('lists the members with their size and time, collections as directories, names decoded', async () => {
    await web.listedInDir((directory) => method.list!(host(), directory, live()), 'b & c é.bin');
  });

  it('lists under webdav.path, and what it lists is read back by fetch at `<directory>/<name>`', async () => {
    plant('base/x/y/read me.bin', 'the bytes');
    const h = host({ 'webdav.path': '/base' });
    expect((await method.list!(h, 'x', live())).map((e) => e.name)).toEqual(['y']);
    expect(await method.list!(h, '', live())).toEqual([expect.objectContaining({ name: 'x', type: 'directory' })]);
    const [entry] = await method.list!(h, 'x/y', live());
    expect(entry).toMatchObject({ name: 'read me.bin', type: 'file', size: 9 });
    const { stream } = await method.fetch!(h, `x/y/${entry!.name}`, live());
    expect(md5(await bytesOf(stream))).toBe(md5(Buffer.from('the bytes')));
  });

  it('an empty collection lists nothing; a file is no directory', async () => {
    fs.mkdirSync(path.join(web.server.root, 'empty'), { recursive: true });
    expect(await method.list!(host(), 'empty', live())).toEqual([]);
    plant('one/file.bin', 'f');
    await expect(method.list!(host(), 'one/file.bin', live())).rejects.toThrow(
      'Cannot list one/file.bin (not a directory)',
    );
  });

  it('a missing directory fails with its name; a wrong password never shows in the reason', async () => {
    await web.failsWithoutSecrets(
      (directory, password) => method.list!(host({}, password), directory, live()),
      /^Cannot list in \(WebDAV PROPFIND http:\/\/127\.0\.0\.1:\d+\/in\/ .*401/,
    );
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
    await web.listingAborts((signal, port) => method.list!(host({}, auth.password, port), 'in', signal));
  });
});
