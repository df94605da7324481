import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { Server } from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { serve } from '@hono/node-server';
import { and, asc, eq } from 'drizzle-orm';
import { expect } from 'vitest';
import type { PortalOperation } from '../../core/portal/ports.ts';
import { dataTransfers } from '../../db/schema.ts';
import type { NodeConfig } from '../../functions/node/config.ts';
import { loadTls } from '../../functions/node/tls.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { scaled } from '../support/time.ts';

/** The portal's tests: a scene of users, destinations and files, served over real HTTPS. */

const run = promisify(execFile);

/** A command line tool to completion (asynchronously: the server answering it runs in this process). */
export async function tool(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  try {
    const { stdout, stderr } = await run(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      maxBuffer: 64 * 1024 * 1024,
      encoding: 'buffer',
      timeout: scaled(120_000),
    });
    return { code: 0, stdout, stderr: stderr.toString() };
  } catch (e) {
    const failed = e as { code?: number; stdout?: Buffer; stderr?: Buffer };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? Buffer.alloc(0), stderr: String(failed.stderr ?? '') };
  }
}

/** The app of a harness on a real HTTPS port of this process, with a self-signed certificate. */
export async function serveHttps(app: { fetch: (request: Request) => Response | Promise<Response> }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-portal-tls-'));
  const tls = await loadTls({ dataDir: dir, tlsCertFile: null, tlsKeyFile: null } as NodeConfig);
  const server = await new Promise<Server>((resolve) => {
    const s = serve(
      { fetch: app.fetch, hostname: '127.0.0.1', port: 0, createServer: https.createServer, serverOptions: tls },
      () => resolve(s as Server),
    );
  });
  const { port } = server.address() as { port: number };
  return {
    url: `https://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const md5 = (bytes: Buffer) => createHash('md5').update(bytes).digest('hex');

/** Deterministic bytes of a given length (no two files alike). */
export function bytesOf(length: number, seed: number) {
  const out = Buffer.alloc(length);
  let x = seed * 2654435761;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** An incoming user through the API, associated with `destinations`, with extra portal permissions. */
export async function incomingUser(
  h: Harness,
  admin: string,
  user: { id: string; password?: string; mode?: string; active?: boolean; grant?: PortalOperation[] },
  destinations: string[],
) {
  const query = new URLSearchParams({ id: user.id, email: `${user.id}@example.org`, iso: 'gb' });
  if (user.mode) query.set('portalService', user.mode);
  // Active while it is associated (the API associates active users only), then as asked.
  query.set('active', 'true');
  if (user.password !== undefined) query.set('pass', user.password);
  const add = await h.call('POST', `/v1/incoming/user/${user.password === undefined ? 'add2' : 'add'}?${query}`, {
    auth: admin,
  });
  expect(add.status, add.text).toBe(200);
  for (const destination of destinations) {
    const r = await h.call('POST', `/v1/incoming/association/add?id=${user.id}&destination=${destination}`, {
      auth: admin,
    });
    expect(r.status, r.text).toBe(200);
  }
  if (user.grant) await h.ports.repos.portal.grant(user.id, user.grant);
  if (user.active === false) {
    const r = await h.call('DELETE', `/v1/incoming/user/del/${user.id}`, { auth: admin });
    expect(r.status, r.text).toBe(200);
  }
}

/** A file under `root` registered for `destination` at `target` through datafile/put; answers its bytes and id. */
export async function putFile(
  h: Harness,
  admin: string,
  root: string,
  destination: string,
  target: string,
  bytes: Buffer,
) {
  const source = path.join(root, destination, target);
  fs.mkdirSync(path.dirname(source), { recursive: true });
  fs.writeFileSync(source, bytes);
  const query = new URLSearchParams({ destination, source, target });
  const r = await h.call('GET', `/v1/datafile/put?${query}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  return { id: r.json.id as number, source, bytes };
}

/** The event lines of a kind (INH, DEA) written so far. */
export const eventLines = (h: Harness, kind: string) => h.events.filter((e) => e.startsWith(`${kind};`));

/** The fields of an event line (`KIND;Key=value;...`). */
export function eventFields(line: string): Record<string, string> {
  return Object.fromEntries(
    line
      .split(';')
      .slice(1)
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  );
}

/**
 * A harness whose app also listens on real HTTPS, with a directory of sources (a source root) and
 * one of uploads, for the portal's tests.
 */
export async function portalScene(options: Parameters<typeof createHarness>[0] = {}) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-portal-')));
  const sources = path.join(dir, 'sources');
  const uploads = path.join(dir, 'uploads');
  const work = path.join(dir, 'work');
  for (const d of [sources, uploads, work]) fs.mkdirSync(d);
  const h = await createHarness({ sourceRoots: [sources], portalUploadDir: uploads, ...options });
  const admin = await h.client('admin', ['.*']);
  const server = await serveHttps(h.app);
  return {
    h,
    admin,
    dir,
    sources,
    uploads,
    work,
    url: server.url,
    async close() {
      await server.close();
      await h.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
export type PortalScene = Awaited<ReturnType<typeof portalScene>>;

/** The newest transfer of a path of a destination (undefined where there is none). */
export const newestTransfer = async (h: Harness, destination: string, target: string) =>
  (
    await h.db
      .select()
      .from(dataTransfers)
      .where(and(eq(dataTransfers.destination, destination), eq(dataTransfers.target, target)))
      .orderBy(asc(dataTransfers.id))
  ).at(-1);

/**
 * DEST and the users of the tests of making folders, on any protocol: putter (`put`, which implies
 * making folders), reader (neither) and maker (`mkdir`, under DEST/ok by its path rule).
 */
export async function folderMakers({ h, admin }: { h: Harness; admin: string }) {
  await h.addDestination('DEST');
  await incomingUser(h, admin, { id: 'putter', password: 'Secret-1', grant: ['put'] }, ['DEST']);
  await incomingUser(h, admin, { id: 'reader', password: 'Secret-2' }, ['DEST']);
  await incomingUser(h, admin, { id: 'maker', password: 'Secret-3', grant: ['mkdir'] }, ['DEST']);
  await h.ports.repos.portal.setOption('maker', 'portal.mkdirPathPermRegex', 'DEST/ok(/.*)?');
}
