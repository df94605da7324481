import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nginxAvailability } from '../support/servers/nginx-dav.ts';
import { type NginxIndex, startNginxIndex } from '../support/servers/nginx-index.ts';
import { type AcquisitionScene, acquisitionFiles, acquisitionScene, minutesAgo } from './support.ts';

/**
 * Acquisition end to end against nginx's `autoindex`: an Acquisition host listed over http from its
 * index page, its new files registered once and retrieved from it.
 */
const nginx = nginxAvailability();
const auth = { user: 'ecpds', password: 'http pä ss!' };
let s: AcquisitionScene;
let server: NginxIndex;

beforeAll(async () => {
  if (!nginx.run) return;
  s = await acquisitionScene('acqhttp');
  server = await startNginxIndex({ auth });
});
afterAll(async () => {
  await s?.close();
  await server?.stop();
});

describe.skipIf(!nginx.run)(`acquisition over http ${nginx.reason}`, () => {
  it('new files are registered once and retrieved from the web server', async () => {
    const files = acquisitionFiles();
    const remote = path.join(server.root, 'pub/acq-new');
    fs.mkdirSync(path.join(remote, 'sub.bin'), { recursive: true });
    for (const [name, bytes] of Object.entries(files)) {
      fs.writeFileSync(path.join(remote, name), bytes);
      fs.utimesSync(path.join(remote, name), minutesAgo(5), minutesAgo(5));
    }
    const hostId = await s.acquisitionHost('ACQ_HTTP', {
      method: 'http',
      host: `127.0.0.1:${server.port}`,
      login: auth.user,
      passwd: auth.password,
      // From the server's root, as the retrieval then reads `/pub/acq-new/<name>`.
      dir: '/pub/acq-new/{.*\\.bin}',
    });
    await s.firstRunSelects(hostId, 'ACQ_HTTP', 'sub.bin');

    // Sending nowhere, the destination's transfers are DONE once their files are retrieved.
    await s.retrievedOnce('ACQ_HTTP', { 'a.bin': files['a.bin'], 'b.bin': files['b.bin'] });
    const gets = () => server.requests().filter((r) => r.method === 'GET' && !r.path.endsWith('/'));
    await expect
      .poll(() =>
        gets()
          .map((r) => r.path)
          .sort(),
      )
      .toEqual(['/pub/acq-new/a.bin', '/pub/acq-new/b.bin']);

    await s.foundAgain('ACQ_HTTP', hostId, ['a.bin', 'b.bin']);
  });

  it('a host down, a file too young, a file changed: on the times and errors of http', () =>
    s.onItsServer(
      'ACQ_HTTP',
      (dir, data) => ({
        method: 'http',
        host: `127.0.0.1:${server.port}`,
        login: auth.user,
        passwd: auth.password,
        dir: `/pub/${dir}/{.*\\.bin}`,
        data,
      }),
      async (dir, name, bytes) => {
        fs.mkdirSync(path.join(server.root, 'pub', dir), { recursive: true });
        fs.writeFileSync(path.join(server.root, 'pub', dir, name), bytes);
      },
    ));
});
