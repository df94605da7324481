import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { type Proftpd, proftpdAvailability, startProftpd } from '../support/servers/proftpd.ts';
import { type AcquisitionScene, acquisitionFiles, acquisitionScene, minutesAgo } from './support.ts';

/**
 * Acquisition end to end against ProFTPD: an Acquisition host listed over ftp, its new files registered
 * once and retrieved from it.
 */
const availability = proftpdAvailability();
let s: AcquisitionScene;
let server: Proftpd;

beforeAll(async () => {
  if (!availability.run) return;
  s = await acquisitionScene('acqftp');
  server = await startProftpd();
});
afterAll(async () => {
  await s?.close();
  await server?.stop();
});

describe.skipIf(!availability.run)(`acquisition over ftp ${availability.reason}`, () => {
  it('new files are registered once and retrieved from the FTP server', async () => {
    const files = acquisitionFiles();
    for (const [name, bytes] of Object.entries(files)) {
      server.plant(`acq-new/${name}`, bytes);
      fs.utimesSync(path.join(server.root, 'acq-new', name), minutesAgo(5), minutesAgo(5));
    }
    const hostId = await s.acquisitionHost('ACQ_FTP', {
      method: 'ftp',
      host: `127.0.0.1:${server.port}`,
      login: server.user,
      passwd: server.password,
      // Relative to the login's home, as the retrieval then reads `acq-new/<name>`.
      dir: 'acq-new/{.*\\.bin}',
    });
    await s.firstRunSelects(hostId, 'ACQ_FTP');

    // Sending nowhere, the destination's transfers are DONE once their files are retrieved.
    await s.retrievedOnce('ACQ_FTP', { 'a.bin': files['a.bin'], 'b.bin': files['b.bin'] });

    await s.foundAgain('ACQ_FTP', hostId, ['a.bin', 'b.bin']);
  });

  it('a host down, a file too young, a file changed: on the times and errors of ftp', () =>
    s.onItsServer(
      'ACQ_FTP',
      (dir, data) => ({
        method: 'ftp',
        host: `127.0.0.1:${server.port}`,
        login: server.user,
        passwd: server.password,
        dir: `${dir}/{.*\\.bin}`,
        data,
      }),
      async (dir, name, bytes) => server.plant(`${dir}/${name}`, bytes),
    ));
});
