import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AZURE_VERSION, sharedKey } from '../../../functions/transfer-methods/azure-target.ts';
import { freePort, ROOT } from '../processes.ts';
import { startServerProcess } from './server-process.ts';

/** Azurite's blob service, from the project's devDependencies (`AZURITE` may point at another install). */
export const AZURITE = process.env.AZURITE ?? path.join(ROOT, 'node_modules/.bin/azurite-blob');

export function azuriteAvailability(): { run: boolean; reason: string } {
  if (fs.existsSync(AZURITE)) return { run: true, reason: '' };
  const reason = `${AZURITE} not installed (npm: azurite)`;
  if (process.env.CI) throw new Error(`CI needs Azurite: ${reason}`);
  return { run: false, reason };
}

/** Azurite's well-known development account. */
export const ACCOUNT = 'devstoreaccount1';
export const ACCOUNT_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface Azurite {
  port: number;
  /** The account's endpoint, as `azure.url` takes it. */
  url: string;
  createContainer(name: string): Promise<void>;
  /** The blob's bytes, or null when there is none (uncommitted blocks make none). */
  blob(container: string, name: string): Promise<Buffer | null>;
  /** The blob's committed and uncommitted block ids. */
  blocks(container: string, name: string): Promise<{ committed: string[]; uncommitted: string[] }>;
  /** A request to the account, Shared Key signed. */
  call(method: string, pathAndQuery: string, headers?: Record<string, string>, body?: Uint8Array): Promise<Response>;
  stop(): Promise<void>;
}

/** Azurite's blob service on a port of its own, in memory, checking Shared Key signatures. */
export async function startAzurite(): Promise<Azurite> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-azurite-'));
  const port = await freePort();
  const args = ['--blobHost', '127.0.0.1', '--blobPort', String(port), '--inMemoryPersistence'];
  const server = await startServerProcess(AZURITE, [...args, '--silent', '--skipApiVersionCheck'], { dir, port });
  const url = `http://127.0.0.1:${port}/${ACCOUNT}`;
  const call = (method: string, pathAndQuery: string, headers: Record<string, string> = {}, body?: Uint8Array) => {
    const target = new URL(`${url}/${pathAndQuery}`);
    const all: Record<string, string> = {
      'x-ms-version': AZURE_VERSION,
      'x-ms-date': new Date().toUTCString(),
      'content-length': String(body?.byteLength ?? 0),
      ...headers,
    };
    all.authorization = sharedKey(ACCOUNT, ACCOUNT_KEY, method, target, all);
    return fetch(target, { method, headers: all, body });
  };
  return {
    port,
    url,
    call,
    async createContainer(name) {
      const r = await call('PUT', `${name}?restype=container`);
      if (r.status !== 201 && r.status !== 409) throw new Error(`container ${name}: ${r.status} ${await r.text()}`);
    },
    async blob(container, name) {
      const r = await call('GET', `${container}/${name}`);
      if (r.status === 404) return null;
      if (!r.ok) throw new Error(`blob ${name}: ${r.status} ${await r.text()}`);
      return Buffer.from(await r.arrayBuffer());
    },
    async blocks(container, name) {
      const r = await call('GET', `${container}/${name}?comp=blocklist&blocklisttype=all`);
      const xml = r.status === 404 ? '' : await r.text();
      const ids = (section: string) =>
        [...(new RegExp(`<${section}>(.*)</${section}>`).exec(xml)?.[1] ?? '').matchAll(/<Name>([^<]*)<\/Name>/g)].map(
          (m) => m[1]!,
        );
      return { committed: ids('CommittedBlocks'), uncommitted: ids('UncommittedBlocks') };
    },
    stop: () => server.stop(),
  };
}
