import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { destinationBackup } from '../support/backups.ts';
import { childEnv, ROOT } from '../support/processes.ts';
import { scaled } from '../support/time.ts';

/** What the runtime suites share: the sources they put, their database, the API slice they compare. */

export interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** One request, however a runtime takes it (a Lambda event, HTTPS to a process, app.request). */
export type Send = (
  method: string,
  path: string,
  options?: { auth?: string; headers?: Record<string, string>; body?: string },
) => Promise<Answer>;

export const basic = (username: string, secret: string) =>
  `Basic ${Buffer.from(`${username}:${secret}`).toString('base64')}`;

/** Byte i of the source `/blob/<seed>/<size>`, as the workerd suite's source server makes them. */
export const blob = (seed: number, size: number) =>
  Buffer.from(new Uint8Array(size).map((_, i) => (31 * i + seed) & 255));

/** An http server of sources at `/blob/<seed>/<size>`, answering HEAD with the length as puts probe it. */
export async function startBlobSource() {
  const server = http.createServer((req, res) => {
    const match = /^\/blob\/(\d+)\/(\d+)$/.exec(req.url ?? '');
    if (!match) return void res.writeHead(404).end('no such blob');
    const bytes = blob(Number(match[1]), Number(match[2]));
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.length });
    res.end(req.method === 'HEAD' ? undefined : bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    url: (seed: number, size: number) => `http://127.0.0.1:${port}/blob/${seed}/${size}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * The environment that points a runtime at the suite's database: an empty Postgres database of its own
 * (so that the runtime migrates it) with the secret key Postgres needs, or nothing for the embedded one.
 */
export async function runtimeDatabase(): Promise<{ env: Record<string, string>; close(): Promise<void> }> {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) return { env: {}, close: async () => undefined };
  const { default: postgres } = await import('postgres');
  const name = `ecpds_rt_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const admin = postgres(url, { max: 1, onnotice: () => undefined });
  await admin.unsafe(`create database "${name}"`);
  const target = new URL(url);
  target.pathname = `/${name}`;
  return {
    env: { DATABASE_URL: target.toString(), ECPDS_SECRET_KEY: randomBytes(32).toString('base64') },
    async close() {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    },
  };
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const TIMESTAMP = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?/g;
const EPOCH_MS = /\b1\d{12}\b/g;

/** An answer without what differs from one server to the next: request ids, times, generated ids. */
export function normalised(answer: Answer) {
  const text = answer.text.replace(UUID, '<uuid>').replace(TIMESTAMP, '<time>').replace(EPOCH_MS, '<ms>');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (json && typeof json === 'object' && typeof (json as { id?: unknown }).id === 'number') {
    (json as { id: unknown }).id = '<id>';
  }
  return {
    status: answer.status,
    contentType: answer.headers['content-type'] ?? null,
    wwwAuthenticate: answer.headers['www-authenticate'] ?? null,
    body: json ?? text,
  };
}

/** The names the slice creates, one set per server so that servers on one database would not collide. */
export interface SliceNames {
  username: string;
  secret: string;
  destination: string;
  user: string;
  hostId: number;
}

type SliceStep =
  | 'version'
  | 'no credentials'
  | 'wrong secret'
  | 'user add'
  | 'user list'
  | 'destination restore'
  | 'destination list'
  | 'datafile put'
  | 'datafile size'
  | 'healthz';

/**
 * The API slice every runtime is compared on: version, 401 and a wrong secret, an incoming user
 * added and listed, a destination restored and listed, a data file put from an http source and its
 * size, /healthz. Answers each step's normalised answer, by name.
 */
export async function apiSlice(send: Send, names: SliceNames, source: { url(seed: number, size: number): string }) {
  const auth = basic(names.username, names.secret);
  const steps = {} as Record<SliceStep, ReturnType<typeof normalised>>;
  const step = async (name: SliceStep, answer: Promise<Answer>) => {
    const raw = await answer;
    steps[name] = normalised(raw);
    return raw;
  };
  await step('version', send('GET', '/v1/version'));
  await step('no credentials', send('GET', '/v1/incoming/user/list'));
  await step('wrong secret', send('GET', '/v1/incoming/user/list', { auth: basic(names.username, 'not-the-secret') }));
  const add = new URLSearchParams({ id: names.user, email: `${names.user}@example.org`, iso: 'gb' });
  await step('user add', send('POST', `/v1/incoming/user/add2?${add}`, { auth }));
  await step('user list', send('GET', '/v1/incoming/user/list', { auth }));
  const backup = destinationBackup(names.destination, [{ method: 'http', host: 'upload.example.org' }], {
    nextHostId: () => names.hostId,
  });
  const json = { 'content-type': 'application/json' };
  const body = JSON.stringify(backup);
  await step('destination restore', send('PUT', '/v1/destination/backup', { auth, headers: json, body }));
  await step('destination list', send('GET', '/v1/destination/list', { auth }));
  const put = new URLSearchParams({ destination: names.destination, source: source.url(7, 1234), target: 'a.bin' });
  const registered = await step('datafile put', send('GET', `/v1/datafile/put?${put}`, { auth }));
  const id = JSON.parse(registered.text).id as number;
  await step('datafile size', send('GET', `/v1/datafile/size?id=${id}`, { auth }));
  await step('healthz', send('GET', '/healthz'));
  return { steps, dataFileId: id };
}

/** HTTPS (or plain HTTP) to a started server, from `localAddress` when given; any certificate is accepted. */
export function requestTo(base: string, localAddress?: string): Send {
  return (method, path, options = {}) => {
    const target = new URL(path, base);
    const lib = target.protocol === 'https:' ? https : http;
    const headers: Record<string, string> = { ...options.headers };
    if (options.auth) headers.authorization = options.auth;
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    return new Promise((resolve, reject) => {
      const r = lib.request(
        target,
        { method, headers, localAddress, rejectUnauthorized: false, agent: false, timeout: scaled(30_000) },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (c: string) => void (text += c));
          res.on('end', () => {
            const answered: Record<string, string> = {};
            for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) answered[k] = String(v);
            resolve({ status: res.statusCode ?? 0, headers: answered, text });
          });
        },
      );
      r.on('timeout', () => r.destroy(new Error('request timed out')));
      r.on('error', reject);
      r.end(options.body);
    });
  };
}

export interface RuntimeProcess {
  child: ChildProcess;
  output(): string;
  /** The URL of the `listening` log line; rejects with the output when the process exits first. */
  ready: Promise<string>;
  exited: Promise<number | string>;
  /** SIGTERM; the exit code (or signal), or 'late' after `withinMs` (then it is killed). */
  stop(withinMs: number): Promise<number | string>;
  kill(): Promise<void>;
}

/** Starts `command args` from the project's root with `env` (over a child environment, as the bin's). */
export function startRuntime(command: string, args: string[], env: Record<string, string | undefined>): RuntimeProcess {
  const child = spawn(command, args, { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  let code: number | string | null = null;
  child.stdout!.setEncoding('utf8').on('data', (c: string) => void (text += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => void (text += c));
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (exitCode, signal) => {
      code = exitCode ?? signal ?? 'unknown';
      resolve(code);
    });
  });
  const listening = () => {
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg === 'listening') return entry.url ?? '';
      } catch {}
    }
    return null;
  };
  const ready = new Promise<string>((resolve, reject) => {
    const poll = setInterval(() => {
      const url = listening();
      if (url !== null) {
        clearInterval(poll);
        resolve(url);
      } else if (code !== null) {
        clearInterval(poll);
        reject(new Error(`${command} ${args.join(' ')} exited (${code}) before it was listening:\n${text}`));
      }
    }, 50);
  });
  ready.catch(() => undefined);
  return {
    child,
    output: () => text,
    ready,
    exited,
    async stop(withinMs) {
      if (code !== null) return code;
      child.kill('SIGTERM');
      const late = new Promise<'late'>((r) => setTimeout(() => r('late'), scaled(withinMs)).unref());
      const result = await Promise.race([exited, late]);
      if (result === 'late') child.kill('SIGKILL');
      return result;
    },
    async kill() {
      if (code !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}
