import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { scaled } from './time.ts';

const run = promisify(execFile);

/** A throwaway local Postgres cluster that a test can stop and start again. */
export interface Cluster {
  url: string;
  port: number;
  start(): Promise<void>;
  /** `pg_ctl stop -m fast`: sessions are cut, in-flight transactions roll back. */
  stop(): Promise<void>;
  /** Stops it if running and removes every file; safe to call more than once. */
  destroy(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
    : [];
  if (versions.length === 0) throw new Error(`no PostgreSQL server binaries under ${root}`);
  return path.join(root, versions.sort((a, b) => Number(b) - Number(a))[0]!, 'bin');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/**
 * initdb into a temporary directory and start it on a free port, listening on 127.0.0.1 only,
 * with trust authentication. As root, the server binaries refuse to run, so they run as the
 * `postgres` OS user on a directory it owns. `maxConnections` is Postgres's (50 by default).
 */
export async function startCluster(settings: { maxConnections?: number } = {}): Promise<Cluster> {
  const bin = binDir();
  const dir = mkdtempSync(path.join(tmpdir(), 'ecpds-pg-'));
  const data = path.join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { uid, gid } = await postgresIds();
    chownSync(dir, uid, gid);
  }
  const pg = (tool: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', path.join(bin, tool), ...args], { timeout: scaled(60_000) })
      : run(path.join(bin, tool), args, { timeout: scaled(60_000) });

  let running = false;
  const port = await freePort();
  const connections = settings.maxConnections ?? 50;
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=${connections}`;
  const cluster: Cluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      await pg('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
      running = true;
    },
    async stop() {
      await pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
      running = false;
    },
    async destroy() {
      if (running) await cluster.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
    await cluster.start();
  } catch (e) {
    await cluster.destroy();
    throw e;
  }
  return cluster;
}
