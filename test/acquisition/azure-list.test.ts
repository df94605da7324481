import { createHmac } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostConnection } from '../../core/dissemination/methods.ts';
import { azureMethod } from '../../functions/transfer-methods/azure.ts';
import { listedBlobs } from '../../functions/transfer-methods/azure-list.ts';
import { AZURE_VERSION } from '../../functions/transfer-methods/azure-target.ts';
import { ACCOUNT, ACCOUNT_KEY, type Azurite, azuriteAvailability, startAzurite } from '../support/servers/azurite.ts';
import { scaled } from '../support/time.ts';
import { bytesOf, hostFor, payload } from '../support/transfer.ts';
import { byName, listsPrefix, live, putListed, waitFor } from './support.ts';

/** An Acquisition host's "directory" listed with List Blobs, against Azurite. */
const azurite = azuriteAvailability();

describe.skipIf(!azurite.run)(`azure: listing against Azurite ${azurite.reason}`, () => {
  let server: Azurite;
  let putting: { before: number; after: number };
  /** The host as an acquisition lists it: no directory of its own. */
  const host = (options: Record<string, string> = {}, over: Parameters<typeof hostFor>[1] = {}) =>
    hostFor('azure', { login: ACCOUNT, password: ACCOUNT_KEY, ...over }, { 'azure.url': server.url, ...options });
  const put = async (name: string, bytes: Uint8Array) => {
    const r = await server.call('PUT', `box/${name}`, { 'x-ms-blob-type': 'BlockBlob' }, bytes);
    if (r.status !== 201) throw new Error(`${name}: ${r.status} ${await r.text()}`);
  };

  beforeAll(async () => {
    server = await startAzurite();
    await server.createContainer('box');
    putting = await putListed(put);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('blobs directly under the prefix are files with their size and time; blob prefixes, directories', async () => {
    // Last-Modified is to the second.
    await listsPrefix(
      (directory) => azureMethod().list!(host(), directory, live()),
      'box/list',
      '/box/list/sub/',
      putting,
    );
  });

  it('reads the directory as a fetch reads <directory>/<name> (containerName, or the first directory)', async () => {
    const cases: [HostConnection, string][] = [
      [host(), 'box/list'],
      [host(), '/box/list/'],
      [host({ 'azure.containerName': 'box' }), 'list'],
    ];
    for (const [h, directory] of cases) {
      const entries = await azureMethod().list!(h, directory, live());
      expect(entries.map((e) => e.name).sort()).toEqual(['a.bin', 'b c+d.txt', 'sub']);
      for (const file of entries.filter((e) => e.type === 'file')) {
        const fetched = await azureMethod().fetch!(h, `${directory.replace(/\/+$/, '')}/${file.name}`, live());
        expect((await bytesOf(fetched.stream)).byteLength).toBe(file.size);
      }
    }
    const root = await azureMethod().list!(host(), 'box', live());
    expect(root.map((e) => `${e.type} ${e.name}`)).toEqual(
      expect.arrayContaining(['directory list', 'directory listing']),
    );
  });

  it('follows NextMarker until the last page, each entry once', async () => {
    const names = Array.from({ length: 7 }, (_, i) => `f${i}.bin`);
    for (const [i, name] of names.entries()) await put(`paged/${name}`, payload(100 + i));
    for (const blob of ['d1/x', 'f1x/z', 'g2/y']) await put(`paged/${blob}`, payload(1));
    const urls: URL[] = [];
    const counting: typeof fetch = (input, init) => {
      urls.push(new URL(String(input)));
      return fetch(input, init);
    };
    const entries = await azureMethod({ fetch: counting, listPageSize: 2 }).list!(host(), 'box/paged', live());
    expect(entries.map((e) => e.name).sort()).toEqual(['d1', ...names, 'f1x', 'g2'].sort());
    expect(byName(entries)['f6.bin']).toMatchObject({ type: 'file', size: 106 });
    expect(urls.length).toBeGreaterThanOrEqual(5);
    expect(urls[0]!.searchParams.get('maxresults')).toBe('2');
    expect(urls.slice(1).every((u) => u.searchParams.has('marker'))).toBe(true);
  });

  it('lists with a SAS token fetched from azure.sasUrl', async () => {
    const sas = await sasServer(accountSas());
    try {
      const h = host(
        { 'azure.sasUrl': sas.url, 'azure.sasSubscriptionKey': 'subscription-key-77' },
        { login: '', password: null },
      );
      const entries = await azureMethod().list!(h, 'box/list', live());
      expect(entries.map((e) => e.name).sort()).toEqual(['a.bin', 'b c+d.txt', 'sub']);
    } finally {
      await sas.stop();
    }
  });

  it('a missing container says so; a path with no container is refused', async () => {
    await expect(azureMethod().list!(host(), 'nobox/in', live())).rejects.toThrow(
      /Azure List Blobs nobox\/in\/ failed: 404 ContainerNotFound/,
    );
    await expect(azureMethod().list!(host(), '/', live())).rejects.toThrow(
      'No Azure container in /: set azure.containerName or give it as the first directory',
    );
  });

  it('a wrong key, or a SAS token the service refuses, never shows in the reason', async () => {
    const key = Buffer.from('not-the-account-key-0123456789').toString('base64');
    const denied = await azureMethod().list!(host({}, { password: key }), 'box/list', live()).catch((e: Error) => e);
    expect(String(denied)).toMatch(/Azure List Blobs box\/list\/ failed: 403/);
    expect(String(denied)).not.toContain(key);

    const forged = accountSas().replace(/sig=[^&]+/, `sig=${encodeURIComponent('Zm9yZ2VkLXNpZ25hdHVyZQ==')}`);
    const sas = await sasServer(forged);
    try {
      const h = host(
        { 'azure.sasUrl': sas.url, 'azure.sasSubscriptionKey': 'subscription-key-77' },
        { login: '', password: null },
      );
      const refused = await azureMethod().list!(h, 'box/list', live()).catch((e: Error) => e);
      expect(String(refused)).toMatch(/Azure List Blobs box\/list\/ failed: 403/);
      for (const secret of ['Zm9yZ2VkLXNpZ25hdHVyZQ', 'subscription-key-77'])
        expect(String(refused)).not.toContain(secret);
    } finally {
      await sas.stop();
    }
  });

  it('an aborted listing rejects with the reason, before or while the server is asked', async () => {
    const aborted = new AbortController();
    aborted.abort(new Error('run cut at maximumDuration'));
    await expect(azureMethod().list!(host(), 'box/list', aborted.signal)).rejects.toThrow('maximumDuration');

    // A server that takes the request and never answers.
    const held = new Set<net.Socket>();
    const silent = net.createServer((socket) => held.add(socket));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const { port } = silent.address() as net.AddressInfo;
      const h = host({ 'azure.url': `http://127.0.0.1:${port}/${ACCOUNT}` });
      const controller = new AbortController();
      const listing = azureMethod().list!(h, 'box/list', controller.signal);
      await waitFor(() => held.size > 0);
      const started = Date.now();
      controller.abort(new Error('run cut at maximumDuration'));
      await expect(listing).rejects.toThrow('maximumDuration');
      expect(Date.now() - started).toBeLessThan(scaled(1000));
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((r) => silent.close(r));
    }
  });
});

describe('azure: a List Blobs page', () => {
  it('a folder marker is no entry; a directory blob is a directory; encoded names are decoded', () => {
    const xml =
      '<EnumerationResults><Blobs><Blob><Name>in/</Name><Properties><Content-Length>0</Content-Length>' +
      '</Properties></Blob><Blob><Name>in/a&amp;b.bin</Name><Properties>' +
      '<Last-Modified>Fri, 02 Jan 2026 03:04:05 GMT</Last-Modified><Content-Length>12</Content-Length>' +
      '</Properties></Blob><Blob><Name>in/dir</Name><Properties><Content-Length>0</Content-Length>' +
      '<ResourceType>directory</ResourceType></Properties></Blob>' +
      '<Blob><Name Encoded="true">in/c%01.bin</Name>' +
      '<Properties><Content-Length>3</Content-Length></Properties></Blob>' +
      '<BlobPrefix><Name>in/d/</Name></BlobPrefix></Blobs><NextMarker /></EnumerationResults>';
    expect(listedBlobs(xml, 'in/')).toEqual([
      { name: 'a&b.bin', type: 'file', size: 12, time: new Date('2026-01-02T03:04:05Z') },
      { name: 'dir', type: 'directory', size: null, time: null },
      { name: 'c\u0001.bin', type: 'file', size: 3, time: null },
      { name: 'd', type: 'directory', size: null, time: null },
    ]);
  });
});

/** An account SAS for the Blob service (list and read), signed with the development account's key. */
function accountSas() {
  const fields = { sv: AZURE_VERSION, ss: 'b', srt: 'sco', sp: 'rl', se: '2099-01-01T00:00:00Z' };
  const toSign = [ACCOUNT, fields.sp, fields.ss, fields.srt, '', fields.se, '', '', fields.sv, '', ''].join('\n');
  const sig = createHmac('sha256', Buffer.from(ACCOUNT_KEY, 'base64')).update(toSign, 'utf8').digest('base64');
  return new URLSearchParams({ ...fields, sig }).toString();
}

/** What azure.sasUrl reaches: a server answering `token` to the request carrying the subscription key. */
async function sasServer(token: string) {
  const server = http.createServer((req, res) => {
    const ok = req.headers['ocp-apim-subscription-key'] === 'subscription-key-77';
    res.writeHead(ok ? 200 : 401).end(ok ? token : '');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sas`,
    stop: () => new Promise((r) => server.close(r)),
  };
}
