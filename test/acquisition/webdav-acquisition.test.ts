import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { davExtMissing, type NginxIndex, startNginxIndex } from '../support/servers/nginx-index.ts';
import { type AcquisitionScene, acquisitionFiles, acquisitionScene, minutesAgo } from './support.ts';

/**
 * Acquisition end to end against nginx's WebDAV (with dav-ext for PROPFIND): an Acquisition host listed
 * over webdav, its new files registered once and retrieved from it.
 */
const missing = davExtMissing();
const auth = { user: 'ecpds', password: 'dav pä ss!' };
let s: AcquisitionScene;
let dav: NginxIndex;

beforeAll(async () => {
  if (missing) return;
  s = await acquisitionScene('acqdav');
  dav = await startNginxIndex({ propfind: true, auth });
});
afterAll(async () => {
  await s?.close();
  await dav?.stop();
});

describe.skipIf(missing !== null)(`acquisition over webdav ${missing ?? ''}`, () => {
  it('new files are registered once and retrieved from the WebDAV server', async () => {
    const files = acquisitionFiles();
    const remote = path.join(dav.root, 'dav/acq-new');
    fs.mkdirSync(path.join(remote, 'sub.bin'), { recursive: true });
    for (const [name, bytes] of Object.entries(files)) {
      fs.writeFileSync(path.join(remote, name), bytes);
      fs.utimesSync(path.join(remote, name), minutesAgo(5), minutesAgo(5));
    }
    const hostId = await s.acquisitionHost('ACQ_DAV', {
      method: 'webdav',
      host: `127.0.0.1:${dav.port}`,
      login: auth.user,
      passwd: auth.password,
      // Under webdav.path, as the retrieval then reads `<webdav.path>/acq-new/<name>`.
      dir: 'acq-new/{.*\\.bin}',
      data: 'webdav.scheme = "http"\nwebdav.path = "/dav"',
    });
    await s.firstRunSelects(hostId, 'ACQ_DAV', 'sub.bin');

    // Sending nowhere, the destination's transfers are DONE once their files are retrieved.
    await s.retrievedOnce('ACQ_DAV', { 'a.bin': files['a.bin'], 'b.bin': files['b.bin'] });
    const gets = () => dav.requests().filter((r) => r.method === 'GET');
    await expect
      .poll(() =>
        gets()
          .map((r) => r.path)
          .sort(),
      )
      .toEqual(['/dav/acq-new/a.bin', '/dav/acq-new/b.bin']);

    await s.foundAgain('ACQ_DAV', hostId, ['a.bin', 'b.bin']);
  });

  it('a host down, a file too young, a file changed: on the times and errors of webdav', () =>
    s.onItsServer(
      'ACQ_DAV',
      (dir, data) => ({
        method: 'webdav',
        host: `127.0.0.1:${dav.port}`,
        login: auth.user,
        passwd: auth.password,
        dir: `${dir}/{.*\\.bin}`,
        data: `webdav.scheme = "http"\nwebdav.path = "/dav"\n${data}`,
      }),
      async (dir, name, bytes) => {
        fs.mkdirSync(path.join(dav.root, 'dav', dir), { recursive: true });
        fs.writeFileSync(path.join(dav.root, 'dav', dir, name), bytes);
      },
    ));
});
