import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, ACCOUNT_KEY, type Azurite, azuriteAvailability, startAzurite } from '../support/servers/azurite.ts';
import { type NginxDav, nginxAvailability, startNginxDav } from '../support/servers/nginx-dav.ts';

/**
 * The azure and webdav methods inside workerd (Miniflare, with the compatibility flags of
 * wrangler.toml), sending to the same local servers as the Node tests: fetch, Web streams and
 * node:crypto under nodejs_compat, Shared Key signing, PUT then MOVE.
 */
const azurite = azuriteAvailability();
const nginx = nginxAvailability();
const MIB = 1024 * 1024;
let blobs: Azurite;
let dav: NginxDav;
let mf: Miniflare;
let dir: string;

beforeAll(async () => {
  [blobs, dav] = await Promise.all([
    azurite.run ? startAzurite() : (undefined as unknown as Azurite),
    nginx.run ? startNginxDav({ user: 'edge', password: 'dav-pass' }) : (undefined as unknown as NginxDav),
  ]);
  await blobs?.createContainer('edge');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-workerd-'));
  await build({
    entryPoints: [new URL('../support/workerd/azure-webdav-entry.ts', import.meta.url).pathname],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    external: ['node:*'],
    outfile: path.join(dir, 'worker.mjs'),
    logLevel: 'silent',
  });
  mf = new Miniflare({
    modules: true,
    modulesRoot: dir,
    scriptPath: path.join(dir, 'worker.mjs'),
    compatibilityDate: '2026-04-01',
    compatibilityFlags: ['nodejs_compat'],
  });
});
afterAll(async () => {
  await mf?.dispose();
  await blobs?.stop();
  await dav?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const filled = (size: number) => createHash('md5').update(new Uint8Array(size).fill(7)).digest('hex');
async function send(body: Record<string, unknown>) {
  const res = await mf.dispatchFetch('http://worker/', { method: 'POST', body: JSON.stringify(body) });
  return (await res.json()) as { sent?: number; md5?: string; confirmed?: number; error?: string };
}

describe.skipIf(!azurite.run)(`azure inside workerd ${azurite.reason}`, () => {
  const azure = (extra: string, target: string, size: number, password = ACCOUNT_KEY) =>
    send({
      method: 'azure',
      host: '',
      login: ACCOUNT,
      password,
      directory: 'edge/wk',
      data: `azure.url = "${blobs.url}"\n${extra}`,
      target,
      size,
    });

  it('blocks in parallel, committed once the attempt is confirmed', async () => {
    const size = 3 * MIB + 5;
    const data = 'azure.multipartSize = "1m"\nazure.blockSize = "512k"\nazure.useMD5 = "yes"';
    await expect(azure(data, 'mp.bin', size)).resolves.toEqual({ sent: size, md5: filled(size), confirmed: 1 });
    expect(
      createHash('md5')
        .update((await blobs.blob('edge', 'wk/mp.bin'))!)
        .digest('hex'),
    ).toBe(filled(size));
    expect((await blobs.blocks('edge', 'wk/mp.bin')).committed).toHaveLength(7);
  });

  it('a wrong key says so', async () => {
    const wrong = Buffer.from('wrong').toString('base64');
    const { error } = await azure('', 'no.bin', 10, wrong);
    expect(error).toMatch(/^Azure Put Block 1 edge\/wk\/no.bin failed: 403 AuthorizationFailure/);
  });
});

describe.skipIf(!nginx.run)(`webdav inside workerd ${nginx.reason}`, () => {
  it('PUT under the temporary name, MOVE once the attempt is confirmed', async () => {
    const size = 2 * MIB;
    const reply = await send({
      method: 'webdav',
      host: `127.0.0.1:${dav.port}`,
      login: 'edge',
      password: 'dav-pass',
      directory: 'wk',
      data: 'webdav.scheme = "http"',
      target: 'f.bin',
      size,
    });
    expect(reply).toEqual({ sent: size, md5: filled(size), confirmed: 1 });
    expect(fs.readdirSync(path.join(dav.root, 'wk'))).toEqual(['f.bin']);
    await expect
      .poll(() => dav.requests().map((r) => `${r.method} ${r.path}`))
      .toEqual(['MKCOL /wk/', 'PUT /wk/f.bin.7-1.tmp', 'HEAD /wk/f.bin.7-1.tmp', 'MOVE /wk/f.bin.7-1.tmp']);
  });
});
