import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptFence, type HostConnection } from '../../core/dissemination/methods.ts';
import { azureMethod } from '../../functions/transfer-methods/azure.ts';
import { azureBlob, azureSettings, blockSizeFor, readSize } from '../../functions/transfer-methods/azure-target.ts';
import { ACCOUNT, ACCOUNT_KEY, type Azurite, azuriteAvailability, startAzurite } from '../support/servers/azurite.ts';
import { abortMidway, chunks, hostFor, md5, payload } from '../support/transfer.ts';

const azurite = azuriteAvailability();
const never = () => new AbortController().signal;
const MIB = 1024 * 1024;

describe('azure: where a file goes, and the options', () => {
  it('the container is azure.containerName, or else the first directory', () => {
    const named = hostFor(
      'azure',
      { hostname: 'acct.blob.core.windows.net', directory: 'in' },
      {
        'azure.containerName': 'box',
      },
    );
    expect(azureBlob(named, { target: 'a b.grib', size: 1 })).toMatchObject({
      url: new URL('https://acct.blob.core.windows.net/box/in/a%20b.grib'),
      label: 'box/in/a b.grib',
    });
    const first = hostFor('azure', { hostname: 'acct.blob.core.windows.net:8443', directory: '/box/in' });
    expect(azureBlob(first, { target: 'f', size: 1 }).url.href).toBe(
      'https://acct.blob.core.windows.net:8443/box/in/f',
    );
    const emulator = hostFor(
      'azure',
      { directory: 'box' },
      { 'azure.url': 'http://127.0.0.1:10000/devstoreaccount1/' },
    );
    expect(azureBlob(emulator, { target: 'f', size: 1 }).url.href).toBe(
      'http://127.0.0.1:10000/devstoreaccount1/box/f',
    );
    expect(() => azureBlob(hostFor('azure', { hostname: 'h' }), { target: 'f', size: 1 })).toThrow(
      'No Azure container and blob in f: set azure.containerName or give it as the first directory',
    );
  });

  it("the reference's defaults: multipartSize 256m, numBuffers 5, useMD5 and ignoreCheck as set", () => {
    const defaults = hostFor('azure', { hostname: 'h' });
    expect(azureSettings(defaults.options.raw, () => false)).toEqual({
      multipartSize: 256 * MIB,
      blockSize: 4 * MIB,
      numBuffers: 5,
      useMD5: false,
    });
    expect(defaults.options.ignoreCheck).toBe(true);
    expect(defaults.options.temporary.use).toBe(false);
    expect(hostFor('azure', { hostname: 'h' }, { 'azure.ignoreCheck': 'no' }).options.ignoreCheck).toBe(false);
    expect([readSize('64m', 0), readSize('10k', 0), readSize('2G', 0), readSize('12', 0), readSize('x', 9)]).toEqual([
      64 * MIB,
      10 * 1024,
      2048 * MIB,
      12,
      9,
    ]);
  });

  it('a file under multipartSize is one block; a bigger one grows its blocks to stay within 50,000', () => {
    const settings = { multipartSize: 256 * MIB, blockSize: 4 * MIB, numBuffers: 5, useMD5: false };
    expect(blockSizeFor(settings, 100 * MIB)).toBe(100 * MIB);
    expect(blockSizeFor(settings, 300 * MIB)).toBe(4 * MIB);
    expect(blockSizeFor(settings, 400_000 * MIB)).toBe(8 * MIB);
  });
});

describe.skipIf(!azurite.run)(`azure: delivering to Azurite ${azurite.reason}`, () => {
  let server: Azurite;
  beforeAll(async () => {
    server = await startAzurite();
    await server.createContainer('box');
  });
  afterAll(async () => {
    await server?.stop();
  });

  const host = (options: Record<string, string> = {}, over: Parameters<typeof hostFor>[1] = {}) =>
    hostFor(
      'azure',
      { login: ACCOUNT, password: ACCOUNT_KEY, directory: 'box/in', ...over },
      {
        'azure.url': server.url,
        ...options,
      },
    );
  const send = (h: HostConnection, target: string, bytes: Uint8Array, attempt?: ReturnType<typeof attemptFence>) =>
    azureMethod().send(h, { target, size: bytes.byteLength, attempt }, chunks(bytes), never());

  it('a small file: one block, committed; answers its size and MD5', async () => {
    const bytes = payload(300_000);
    await expect(send(host(), 'a.grib', bytes)).resolves.toEqual({ sent: 300_000, md5: md5(bytes) });
    expect(md5((await server.blob('box', 'in/a.grib'))!)).toBe(md5(bytes));
    expect(await server.blocks('box', 'in/a.grib')).toMatchObject({ uncommitted: [] });
    expect((await server.blocks('box', 'in/a.grib')).committed).toHaveLength(1);
  });

  it('from azure.multipartSize on: blocks of azure.blockSize, committed in order', async () => {
    const bytes = payload(3_000_000, 5);
    const h = host({ 'azure.multipartSize': '1m', 'azure.blockSize': '256k', 'azure.numBuffers': '3' });
    await send(h, 'big.grib', bytes);
    expect(md5((await server.blob('box', 'in/big.grib'))!)).toBe(md5(bytes));
    expect((await server.blocks('box', 'in/big.grib')).committed).toHaveLength(12);
  });

  it('an empty file is an empty blob', async () => {
    await send(host(), 'empty', new Uint8Array(0));
    expect((await server.blob('box', 'in/empty'))?.length).toBe(0);
  });

  it('nothing shows under the name before the commit, which waits for the attempt to be confirmed', async () => {
    const bytes = payload(2_000_000, 9);
    const h = host({ 'azure.multipartSize': '1m', 'azure.blockSize': '512k' });
    let seen: { blob: Buffer | null; uncommitted: number } | null = null;
    const confirmed = attemptFence(21, 1, async () => {
      seen = {
        blob: await server.blob('box', 'in/c.grib'),
        uncommitted: (await server.blocks('box', 'in/c.grib')).uncommitted.length,
      };
    });
    await send(h, 'c.grib', bytes, confirmed);
    expect(seen).toEqual({ blob: null, uncommitted: 4 });
    expect(md5((await server.blob('box', 'in/c.grib'))!)).toBe(md5(bytes));
  });

  it('an attempt that lost its transfer never commits: the blob keeps what it had', async () => {
    const old = payload(1000, 1);
    await send(host(), 'd.grib', old);
    const lost = attemptFence(22, 2, async () => {
      throw new Error('Transfer 22 is no longer this attempt');
    });
    await expect(send(host(), 'd.grib', payload(5000, 2), lost)).rejects.toThrow('no longer this attempt');
    expect(md5((await server.blob('box', 'in/d.grib'))!)).toBe(md5(old));
    // Its block waits uncommitted, never to be part of the blob: the next commit discards it.
    expect((await server.blocks('box', 'in/d.grib')).uncommitted).toHaveLength(1);
    const next = payload(3000, 3);
    await send(host(), 'd.grib', next);
    expect(md5((await server.blob('box', 'in/d.grib'))!)).toBe(md5(next));
    expect(await server.blocks('box', 'in/d.grib')).toMatchObject({ uncommitted: [] });
  });

  it('a source that changed size commits nothing', async () => {
    const h = host({ 'azure.multipartSize': '100k', 'azure.blockSize': '64k' });
    const shorter = azureMethod().send(h, { target: 'e', size: 500_000 }, chunks(payload(400_000)), never());
    await expect(shorter).rejects.toThrow('Source changed size: 400000 bytes read, 500000 registered');
    const longer = azureMethod().send(h, { target: 'e', size: 300_000 }, chunks(payload(400_000)), never());
    await expect(longer).rejects.toThrow('Source changed size: more than 300000 bytes read, 300000 registered');
    expect(await server.blob('box', 'in/e')).toBeNull();
  });

  it('an abort ends the upload at once, and commits nothing', async () => {
    await abortMidway((source, signal) => azureMethod().send(host(), { target: 'f', size: 1_000_000 }, source, signal));
    expect(await server.blob('box', 'in/f')).toBeNull();
  });

  it('azure.useMD5: each block and the blob carry their MD5; azure.ignoreCheck false reads the size back', async () => {
    const bytes = payload(700_000, 4);
    const h = host({ 'azure.useMD5': 'yes', 'azure.ignoreCheck': 'no', 'azure.multipartSize': '256k' });
    await send(h, 'g.grib', bytes);
    const head = await server.call('HEAD', 'box/in/g.grib');
    expect(head.headers.get('content-md5')).toBe(Buffer.from(md5(bytes), 'hex').toString('base64'));
    expect(head.headers.get('content-length')).toBe('700000');
  });

  it('a wrong account key is refused with the service reason, never the key', async () => {
    const wrong = Buffer.from('not the key of this account').toString('base64');
    const error = await send(host({}, { password: wrong }), 'h', payload(10)).catch((e: Error) => e.message);
    expect(error).toBe(
      'Azure Put Block 1 box/in/h failed: 403 AuthorizationFailure Server failed to authenticate the request. ' +
        'Make sure the value of the Authorization header is formed correctly including the signature.',
    );
    expect(error).not.toContain(wrong);
  });

  it('without a login and password: a SAS token from azure.sasUrl, asked with azure.sasSubscriptionKey', async () => {
    const token = accountSas();
    const asked: (string | undefined)[] = [];
    const gateway = http.createServer((req, res) => {
      const key = req.headers['ocp-apim-subscription-key'] as string | undefined;
      asked.push(key);
      res.writeHead(key === 'sub-key-1' ? 200 : 401).end(key === 'sub-key-1' ? token : 'no');
    });
    await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r));
    const sasUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}/storage/sas`;
    try {
      const bytes = payload(50_000, 6);
      const sas = { 'azure.sasUrl': sasUrl, 'azure.sasSubscriptionKey': 'sub-key-1' };
      await send(host(sas, { login: '', password: null }), 'i.grib', bytes);
      expect(md5((await server.blob('box', 'in/i.grib'))!)).toBe(md5(bytes));
      const refused = { 'azure.sasUrl': sasUrl, 'azure.sasSubscriptionKey': 'sub-key-2' };
      const error = await send(host(refused, { login: '', password: null }), 'j', payload(10)).catch(
        (e: Error) => e.message,
      );
      expect(error).toBe(`Azure SAS token from ${sasUrl} failed: 401 Unauthorized`);
      expect(asked).toEqual(['sub-key-1', 'sub-key-2']);
    } finally {
      await new Promise((r) => gateway.close(r));
    }
  });

  it('no credentials at all is a failure that says what to set', async () => {
    await expect(send(host({}, { login: '', password: null }), 'k', payload(10))).rejects.toThrow(
      'No Azure credentials: set the login and password (account name and key), ' +
        'or azure.sasUrl and azure.sasSubscriptionKey',
    );
  });
});

/** An account SAS for Azurite's account: blob service, every resource type, read and write. */
function accountSas(): string {
  const values = { sv: '2019-12-12', ss: 'b', srt: 'sco', sp: 'rwdlac', se: '2099-01-01T00:00:00Z', spr: 'https,http' };
  const toSign = [ACCOUNT, values.sp, values.ss, values.srt, '', values.se, '', values.spr, values.sv, ''].join('\n');
  const sig = createHmac('sha256', Buffer.from(ACCOUNT_KEY, 'base64')).update(toSign, 'utf8').digest('base64');
  return new URLSearchParams({ ...values, sig }).toString();
}
