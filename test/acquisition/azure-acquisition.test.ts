import { afterAll, beforeAll, describe, it } from 'vitest';
import { ACCOUNT, ACCOUNT_KEY, type Azurite, azuriteAvailability, startAzurite } from '../support/servers/azurite.ts';
import { type AcquisitionScene, acquisitionFiles, acquisitionScene } from './support.ts';

/**
 * Acquisition end to end against Azurite: an Acquisition host listing a prefix of a container, its
 * new blobs registered once and retrieved from the container.
 */
const azurite = azuriteAvailability();
let s: AcquisitionScene;
let server: Azurite;

beforeAll(async () => {
  if (!azurite.run) return;
  s = await acquisitionScene('acqaz');
  server = await startAzurite();
  await server.createContainer('box');
});
afterAll(async () => {
  await s?.close();
  await server?.stop();
});

async function put(name: string, bytes: Buffer) {
  const r = await server.call('PUT', `box/${name}`, { 'x-ms-blob-type': 'BlockBlob' }, bytes);
  if (r.status !== 201) throw new Error(`${name}: ${r.status} ${await r.text()}`);
}

describe.skipIf(!azurite.run)(`acquisition over azure ${azurite.reason}`, () => {
  it('new blobs are registered once and retrieved from the container', async () => {
    const files = acquisitionFiles();
    for (const [name, bytes] of Object.entries(files)) await put(`acq-new/${name}`, bytes);
    await put('acq-new/deeper/c.bin', Buffer.from('not listed'));
    const hostId = await s.acquisitionHost('ACQ_AZ', {
      method: 'azure',
      host: `127.0.0.1:${server.port}`,
      login: ACCOUNT,
      passwd: ACCOUNT_KEY,
      // No azure.containerName: the container is the line's first directory.
      dir: 'box/acq-new/{.*\\.bin}',
      data: `azure.url = "${server.url}"`,
    });
    await s.firstRunSelects(hostId, 'ACQ_AZ', 'deeper');

    // Sending nowhere, the destination's transfers are DONE once their files are retrieved.
    await s.retrievedOnce('ACQ_AZ', { 'a.bin': files['a.bin'], 'b.bin': files['b.bin'] });

    await s.foundAgain('ACQ_AZ', hostId, ['a.bin', 'b.bin']);
  });

  it('a host down, a file too young, a file changed: on the times and errors of azure', () =>
    s.onItsServer(
      'ACQ_AZ',
      (dir, data) => ({
        method: 'azure',
        host: `127.0.0.1:${server.port}`,
        login: ACCOUNT,
        passwd: ACCOUNT_KEY,
        dir: `box/${dir}/{.*\\.bin}`,
        data: `azure.url = "${server.url}"\n${data}`,
      }),
      (dir, name, bytes) => put(`${dir}/${name}`, bytes),
    ));
});
