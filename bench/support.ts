import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { generateSecret, hashGeneratedSecret, SecretBox } from '../core/common/crypto.ts';
import type { SourceProber } from '../core/data-files/ports.ts';
import type { Ports } from '../core/ports.ts';
import type { ObjectStore } from '../core/store/ports.ts';
import type { DbHandle } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { apiClients } from '../db/schema.ts';
import { backgroundWork, createPorts, createProcessState } from '../functions/ports.ts';
import { type Scale, seed } from './seed.ts';

/** What `npm run bench` and `npm run soak` share: the bench client, server processes, memory. */
export const ROOT = path.resolve(new URL('..', import.meta.url).pathname);
export const BENCH_FILE = path.join(ROOT, 'BENCHMARKS.md');
export const secret = generateSecret();
export const auth = `Basic ${Buffer.from(`bench:${secret}`).toString('base64')}`;
export const secretKey = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64');
export const log = (m: string) => process.stderr.write(`${m}\n`);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A TCP port free on 127.0.0.1 when asked (for a server the bench starts). */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });

/** Waits until something accepts connections on 127.0.0.1:`port` (10 s at most). */
export async function untilListening(port: number) {
  for (let i = 0; i < 400; i++) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => resolve(Boolean(socket.destroy())));
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await sleep(25);
  }
  throw new Error(`nothing listens on ${port}`);
}
/** The middle value (the upper one of an even count). */
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/**
 * Migrates, seeds and adds the `bench` client with every permission, then closes. `statistics: false`
 * leaves the tables neither vacuumed nor analyzed (see `seed`).
 */
export async function prepare(handle: DbHandle, scale: Scale, { statistics = true } = {}) {
  await migrate(handle);
  await seed(handle.db, scale, { statistics });
  await addBenchClient(handle);
  // Done here rather than by autovacuum during the first scenarios, which it would slow down.
  if (statistics) await handle.db.execute(sql.raw('vacuum analyze'));
  await handle.close();
}

/** The `bench` API client, with every permission: the one `auth` logs in as. */
export async function addBenchClient(handle: DbHandle) {
  const now = new Date();
  await handle.db.insert(apiClients).values({
    username: 'bench',
    secretHash: hashGeneratedSecret(secret),
    permissions: ['.*'],
    origin: 'cli',
    createdAt: now,
    updatedAt: now,
  });
}

/** `stdout: 'pipe'` for a bench that reads the event lines (read it to its end, or the child blocks). */
export function start(cmd: string[], env: Record<string, string>, stdout: 'ignore' | 'pipe' = 'ignore'): ChildProcess {
  return spawn(process.execPath, cmd, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', stdout, 'inherit'],
  });
}

/** `ecpds-edge serve` on this port with the bench's key, TLS files and source root under `tmp`. */
export function startService(
  tmp: string,
  port: number,
  env: Record<string, string>,
  stdout: 'ignore' | 'pipe' = 'ignore',
) {
  // BENCH_SERVER_NODE_OPTIONS, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`, profiles the service only.
  // Given as node arguments: NODE_OPTIONS refuses --cpu-prof.
  const nodeArgs = (process.env.BENCH_SERVER_NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean);
  return start(
    [...nodeArgs, 'functions/bin/ecpds-edge.mjs', 'serve'],
    {
      ...env,
      HOST: '127.0.0.1',
      PORT: String(port),
      ECPDS_SECRET_KEY: secretKey,
      ECPDS_DEMO: '0',
      // The portal's SFTP server only for a bench that asks for it (a port of its own).
      ECPDS_PORTAL_SFTP_PORT: env.ECPDS_PORTAL_SFTP_PORT ?? '0',
      ECPDS_PORTAL_S3_PORT: env.ECPDS_PORTAL_S3_PORT ?? '0',
      ECPDS_SWEEP_SECONDS: '0',
      // The API alone: the bench's destinations are never started, so a mover would only poll.
      ECPDS_MOVER: env.ECPDS_MOVER ?? '0',
      ECPDS_SOURCE_ROOTS: path.join(tmp, 'src'),
      TLS_CERT_FILE: path.join(tmp, 'tls/cert.pem'),
      TLS_KEY_FILE: path.join(tmp, 'tls/key.pem'),
    },
    stdout,
  );
}

export async function waitFor(url: string) {
  for (let i = 0; i < 240; i++) {
    try {
      if ((await fetch(url)).status < 500) return;
    } catch {
      /* not up yet */
    }
    await sleep(250);
  }
  throw new Error(`no answer from ${url}`);
}

export async function stop(child: ChildProcess) {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

/** Resident memory of a process in MiB: now (VmRSS) or its peak (VmHWM). */
export function memoryOf(pid: number, which: 'VmRSS' | 'VmHWM' = 'VmHWM') {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${which}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
}

const TICK_US = 1e6 / 100; // USER_HZ: clock ticks of /proc/<pid>/stat, 100 per second on Linux

/** CPU time (user + system) a process has used, in µs. */
export function cpuOf(pid: number): number {
  // The command name may hold spaces and parentheses; the fields after its last ')' are fixed:
  // utime and stime are 12th and 13th.
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

/**
 * CPU time of every Postgres process of this machine (the local server's backends and workers), in
 * µs; with `database`, of the backends connected to that database only.
 */
export function postgresCpu(database?: string): number {
  let total = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
      // A backend's title: `postgres: <user> <database> <client> <state>`.
      if (database !== undefined && !fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(` ${database} `)) {
        continue;
      }
      total += cpuOf(Number(entry));
    } catch {
      /* the process ended meanwhile */
    }
  }
  return total;
}

export const machine = () =>
  `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ` +
  `Node ${process.version}, ${os.platform()} ${os.release()}`;

/** The file cut at its `## ` headings; the part before the first has the heading ''. */
function sections(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const part of text.split(/^(?=## )/m)) {
    if (part.trim() === '') continue;
    out.push([part.startsWith('## ') ? part.slice(0, part.indexOf('\n') >>> 0) : '', part.trimEnd()]);
  }
  return out;
}

/**
 * A benchmark's tables: printed, and written to BENCHMARKS.md only when asked (BENCH_WRITE=1), so
 * that a run leaves the working tree as it found it. BENCHMARKS.md is written by several tools and
 * by hand: each tool replaces the sections it writes (`npm run bench` also the part before the
 * first heading) and keeps every other section.
 */
export function writeBenchFile(text: string) {
  process.stdout.write(`${text.trimEnd()}\n`);
  if (process.env.BENCH_WRITE !== '1') {
    log('BENCHMARKS.md left as it was (BENCH_WRITE=1 writes these tables into it)');
    return;
  }
  const old = fs.existsSync(BENCH_FILE) ? sections(fs.readFileSync(BENCH_FILE, 'utf8')) : [];
  const fresh = new Map(sections(text));
  const out: string[] = [];
  if (!fresh.has('') && !old.some(([h]) => h === '')) out.push('# Benchmarks');
  for (const [heading, body] of old) {
    out.push(fresh.get(heading) ?? body);
    fresh.delete(heading);
  }
  const lead = fresh.get('');
  if (lead !== undefined) {
    out.unshift(lead);
    fresh.delete('');
  }
  out.push(...fresh.values());
  fs.writeFileSync(BENCH_FILE, `${out.join('\n\n')}\n`);
  // Tables aligned as the lint check wants them, so that a fresh run can be committed as it is.
  execFileSync('npx', ['biome', 'format', '--config-path', '.ci/lint.jsonc', '--write', BENCH_FILE], {
    cwd: ROOT,
    stdio: 'ignore',
  });
  log('written BENCHMARKS.md');
}

/** Core's ports on a bench database, in process, with the bench's key: only errors are logged. */
export function benchPorts(
  handle: DbHandle,
  options: { sources?: SourceProber; wakeMovers?: () => void; store?: ObjectStore } = {},
): Ports {
  const logger = { info() {}, warn() {}, error: (m: string, f?: unknown) => log(`${m} ${JSON.stringify(f)}`) };
  return createPorts({
    db: handle.db,
    state: createProcessState(),
    secrets: new SecretBox(new Uint8Array(Buffer.from(secretKey, 'base64'))),
    logger,
    events: { write() {} },
    sources: options.sources ?? { probe: async () => ({ size: 0 }) },
    waitUntil: backgroundWork(logger).waitUntil,
    wakeMovers: options.wakeMovers,
    store: options.store ?? null,
  });
}

/**
 * An `ecpds-edge mover` process on `url`, reading sources under `sourceRoots` and writing its event
 * lines under `work`. BENCH_MOVER_NODE_OPTIONS, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`,
 * profiles the mover processes only.
 */
export function spawnMover(
  url: string,
  name: string,
  options: { concurrency: number; sourceRoots: string; work: string; env?: Record<string, string> },
) {
  const nodeArgs = (process.env.BENCH_MOVER_NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean);
  const args = [...nodeArgs, 'functions/bin/ecpds-edge.mjs', 'mover', '--name', name];
  return spawn(process.execPath, [...args, '--concurrency', String(options.concurrency)], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: url,
      ECPDS_SECRET_KEY: secretKey,
      ECPDS_SOURCE_ROOTS: options.sourceRoots,
      ECPDS_EVENT_LOG: path.join(options.work, 'events.log'),
      ECPDS_SWEEP_SECONDS: '0',
      ...options.env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** Stops a process with SIGTERM; resolves once it exited. */
export const stopped = (child: ChildProcess) =>
  new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
