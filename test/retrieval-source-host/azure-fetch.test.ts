import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { azureMethod } from '../../functions/transfer-methods/azure.ts';
import { ACCOUNT, ACCOUNT_KEY, type Azurite, azuriteAvailability, startAzurite } from '../support/servers/azurite.ts';
import { bytesOf, chunks, hostFor, md5, payload } from '../support/transfer.ts';

/** The Azure method's read of a Source host's blob, against Azurite with the account's Shared Key. */
const azurite = azuriteAvailability();
const never = () => new AbortController().signal;

describe.skipIf(!azurite.run)(`azure: reading from Azurite ${azurite.reason}`, () => {
  let server: Azurite;
  beforeAll(async () => {
    server = await startAzurite();
    await server.createContainer('box');
  });
  afterAll(() => server?.stop());

  const host = (key = ACCOUNT_KEY) =>
    hostFor('azure', { login: ACCOUNT, password: key, directory: 'box/products' }, { 'azure.url': server.url });

  it('reads a blob with the account key, its size told before the bytes', async () => {
    const bytes = payload(400_000);
    await azureMethod().send(host(), { target: 'run12.grib', size: bytes.byteLength }, chunks(bytes), never());
    const read = await azureMethod().fetch!(host(), 'box/products/run12.grib', never());
    expect(read.size).toBe(bytes.byteLength);
    expect(md5(await bytesOf(read.stream))).toBe(md5(bytes));
  });

  it('refuses a missing blob and a wrong key with the service reason, never the key', async () => {
    const missing = await azureMethod().fetch!(host(), 'box/products/none.grib', never()).catch(
      (e: Error) => e.message,
    );
    expect(missing).toMatch(/^Azure Get Blob box\/products\/none.grib failed: 404 BlobNotFound/);
    const wrongKey = Buffer.from('not the account key').toString('base64');
    const refused = await azureMethod().fetch!(host(wrongKey), 'box/products/run12.grib', never()).catch(
      (e: Error) => e.message,
    );
    expect(refused).toContain('failed: 403');
    expect(refused).not.toContain(wrongKey);
  });
});
