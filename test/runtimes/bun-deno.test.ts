import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { NOT_SECURE } from '../../functions/http/middleware.ts';
import { freePort, killAll, ROOT, type ServerProcess, startServer, tempDir } from '../support/processes.ts';
import { scaled } from '../support/time.ts';
import {
  apiSlice,
  basic,
  normalised,
  type RuntimeProcess,
  requestTo,
  runtimeDatabase,
  type Send,
  startBlobSource,
  startRuntime,
} from './support.ts';

/**
 * The built Bun and Deno entries (dist/bun.js, dist/deno.js, compiled by the run's global setup) as
 * operators start them: HTTPS through the TLS front, or plain HTTP behind a trusted proxy; the same
 * API slice answered as the Node server answers it, on the suite's database.
 */

// Each server starts its own database and, over HTTPS, generates its certificate.
vi.setConfig({ testTimeout: scaled(60_000), hookTimeout: scaled(180_000) });

const RUNTIMES = [
  { name: 'bun', bin: path.join(ROOT, 'node_modules/.bin/bun'), args: ['dist/bun.js'] },
  { name: 'deno', bin: path.join(ROOT, 'node_modules/.bin/deno'), args: ['run', '-A', 'dist/deno.js'] },
] as const;
// Both are devDependencies: missing means a broken install, which only a run outside CI may skip.
const present = (bin: string) => fs.existsSync(bin);
const runs = (bin: string) => present(bin) || Boolean(process.env.CI);

const SLICE = { username: 'sliceclient', secret: 'Sl1ce-secret-123' };
const THROTTLED = { username: 'throttled', secret: 'Thr0ttled-secret-9' };
const PROPERTIES = `[API]\n${SLICE.username}=${SLICE.secret}:.*\n${THROTTLED.username}=${THROTTLED.secret}:.*\n`;
const NAMES = { ...SLICE, destination: 'RUNTIME1', user: 'runtimeuser', hostId: 73_001 };

let source: Awaited<ReturnType<typeof startBlobSource>>;
let propertiesFile: string;
const databases: Array<Awaited<ReturnType<typeof runtimeDatabase>>> = [];
const started: RuntimeProcess[] = [];

/** A data directory, and a database of its own when the suite runs on Postgres. */
async function serverEnv(extra: Record<string, string> = {}) {
  const database = await runtimeDatabase();
  databases.push(database);
  return {
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    ECPDS_DATA_DIR: path.join(tempDir('ecpds-runtime-'), 'data'),
    ECPDS_SOURCE_HOSTS: source.host,
    ...database.env,
    ...extra,
  };
}

let nodeServer: ServerProcess;
let nodeUrl: Promise<string>;
let nodeSlice: ReturnType<typeof apiSlice> | null = null;
/** The Node server's answers to the slice, taken once for both runtimes. */
const nodeAnswers = async () => (nodeSlice ??= apiSlice(requestTo(await nodeUrl), NAMES, source));

type Mode = 'https' | 'proxy';
/** Every server of the file, started at once: they spend most of their start-up creating their databases. */
const servers = new Map<string, Promise<RuntimeProcess & { dataDir: string }>>();
const serverOf = (runtime: string, mode: Mode) => servers.get(`${runtime} ${mode}`)!;

beforeAll(async () => {
  source = await startBlobSource();
  propertiesFile = path.join(tempDir(), 'ecpds.properties');
  fs.writeFileSync(propertiesFile, PROPERTIES);
  // Without a store, as the other runtimes here: sources are read at each send, and /healthz has no store to check.
  nodeServer = startServer(await serverEnv({ ECPDS_PROPERTIES: propertiesFile, ECPDS_RETRIEVAL: 'none' }));
  nodeUrl = nodeServer.ready;
  nodeUrl.catch(() => undefined);
  for (const runtime of RUNTIMES) {
    if (!runs(runtime.bin)) continue;
    const secure = serverEnv({ ECPDS_TRUST_PROXY: '0', ECPDS_PROPERTIES: propertiesFile });
    servers.set(
      `${runtime.name} https`,
      secure.then((env) => start(runtime, env)),
    );
    servers.set(
      `${runtime.name} proxy`,
      serverEnv({ ECPDS_TRUST_PROXY: '1' }).then((env) => start(runtime, env)),
    );
  }
  for (const server of servers.values()) server.catch(() => undefined);
});

afterAll(async () => {
  await Promise.all(started.map((p) => p.kill()));
  await killAll();
  for (const database of databases) await database.close();
  await source?.stop();
});

function start(runtime: (typeof RUNTIMES)[number], env: Record<string, string>) {
  if (!present(runtime.bin)) throw new Error(`${runtime.bin} is missing: npm ci installs it (a devDependency)`);
  const proc = startRuntime(runtime.bin, [...runtime.args], env);
  started.push(proc);
  return Object.assign(proc, { dataDir: env.ECPDS_DATA_DIR! });
}

for (const runtime of RUNTIMES) {
  describe.runIf(runs(runtime.bin))(`${runtime.name}: HTTPS through the TLS front`, () => {
    let server: RuntimeProcess & { dataDir: string };
    let url: string;
    let send: Send;

    beforeAll(async () => {
      server = await serverOf(runtime.name, 'https');
      url = await server.ready;
      send = requestTo(url);
    });

    it('listens over HTTPS on the given host and port, and prints no bootstrap secret with ECPDS_PROPERTIES', () => {
      expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      // On the suite's database: the embedded one only without TEST_DATABASE_URL.
      expect(fs.existsSync(path.join(server.dataDir, 'pgdata'))).toBe(!process.env.TEST_DATABASE_URL);
      expect(server.output()).not.toContain('Bootstrap API client');
      expect(server.output()).not.toContain(SLICE.secret);
    });

    it('answers the API slice as the Node server does', async () => {
      const [mine, node] = await Promise.all([apiSlice(send, NAMES, source), nodeAnswers()]);
      expect(mine.steps).toEqual(node.steps);
      expect(mine.steps.version).toMatchObject({ status: 200, body: { status: 'ok' } });
      expect(mine.steps['no credentials']).toMatchObject({
        status: 401,
        wwwAuthenticate: expect.stringMatching(/^Basic /),
      });
      expect(mine.steps['wrong secret'].body).toEqual({ status: 'error', message: 'User not authorized' });
      expect(mine.steps['user list'].body).toMatchObject({ userList: [{ id: NAMES.user }] });
      expect(mine.steps['datafile size'].body).toMatchObject({ status: 'ok', size: 1234 });
      expect(mine.steps.healthz.status).toBe(200);
    });

    it('answers plain HTTP on the same port with the 403 of the API, as the Node server does', async () => {
      const plain = await requestTo(url.replace(/^https:/, 'http:'))('GET', '/v1/version');
      expect([plain.status, plain.text]).toEqual([403, NOT_SECURE]);
      const node = await requestTo((await nodeUrl).replace(/^https:/, 'http:'))('GET', '/v1/version');
      expect([plain.status, plain.text]).toEqual([node.status, node.text]);
    });

    it("throttles by the client's address as the front saw it, not the front's own", async () => {
      // Wire decisions §2: 20 failures of one (username, address) pair refuse that pair alone.
      const from = (address: string) => requestTo(url, address);
      const wrong = basic(THROTTLED.username, 'not-the-secret');
      for (let i = 0; i < 20; i++) {
        expect((await from('127.0.0.2')('GET', '/v1/incoming/user/list', { auth: wrong })).status).toBe(500);
      }
      const right = basic(THROTTLED.username, THROTTLED.secret);
      const refused = await from('127.0.0.2')('GET', '/v1/incoming/user/list', { auth: right });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect((await from('127.0.0.1')('GET', '/v1/incoming/user/list', { auth: right })).status).toBe(200);
    });

    it('stops on SIGTERM with exit code 0 within a few seconds', async () => {
      expect(await server.stop(5000)).toBe(0);
      expect(server.output()).toMatch(/"msg":"stopped"/);
    });
  });

  describe.runIf(runs(runtime.bin))(`${runtime.name}: plain HTTP behind a trusted proxy`, () => {
    let server: RuntimeProcess;
    let url: string;

    beforeAll(async () => {
      server = await serverOf(runtime.name, 'proxy');
      url = await server.ready;
    });

    it('serves plain HTTP; /v1 answers only with X-Forwarded-Proto: https', async () => {
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const send = requestTo(url);
      const plain = await send('GET', '/v1/version');
      expect([plain.status, plain.text]).toEqual([403, NOT_SECURE]);
      const forwarded = await send('GET', '/v1/version', { headers: { 'x-forwarded-proto': 'https' } });
      expect(forwarded.status).toBe(200);
      expect(JSON.parse(forwarded.text)).toMatchObject({ status: 'ok', version: expect.any(String) });
      const node = normalised(await requestTo(await nodeUrl)('GET', '/v1/version'));
      expect(normalised(forwarded)).toEqual(node);
    });

    it('prints the bootstrap admin secret on first start without ECPDS_PROPERTIES, and it works', async () => {
      const secret = /Bootstrap API client 'admin' created[^\n]*\n\n\s+(\S+)/.exec(server.output())?.[1];
      expect(secret).toBeDefined();
      const headers = { 'x-forwarded-proto': 'https' };
      const list = await requestTo(url)('GET', '/v1/incoming/user/list', { auth: basic('admin', secret!), headers });
      expect(list.status, list.text).toBe(200);
      expect(JSON.parse(list.text)).toEqual({ status: 'ok', userList: [] });
    });

    it('stops on SIGTERM with exit code 0 within a few seconds', async () => {
      expect(await server.stop(5000)).toBe(0);
    });
  });
}
