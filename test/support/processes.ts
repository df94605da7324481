import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { scaled } from './time.ts';

/** Helpers to drive the real `ecpds-edge` bin as a child process (server and CLI tests). */

export const ROOT = path.resolve(new URL('../..', import.meta.url).pathname);
const BIN = path.join(ROOT, 'functions/bin/ecpds-edge.mjs');

/** Variables of the test process that must not leak into a child's configuration. */
const INHERITED_OUT = /^(DATABASE_URL|TEST_DATABASE_URL|HOST|PORT|TLS_CERT_FILE|TLS_KEY_FILE|ECPDS_.*)$/;

export function childEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!INHERITED_OUT.test(k)) env[k] = v;
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  // No portal SFTP server nor S3 listener unless a test asks for one: servers of parallel tests would share their ports.
  return { ECPDS_DEMO: '0', HOST: '127.0.0.1', ECPDS_PORTAL_SFTP_PORT: '0', ECPDS_PORTAL_S3_PORT: '0', ...env };
}

const temps: string[] = [];
export function tempDir(prefix = 'ecpds-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  temps.push(dir);
  return dir;
}
export const removeTempDirs = () => {
  for (const d of temps.splice(0)) fs.rmSync(d, { recursive: true, force: true });
};

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `node functions/bin/ecpds-edge.mjs <args>` to completion. */
export function runCli(args: string[], env: Record<string, string | undefined>): CliResult {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: childEnv(env),
    encoding: 'utf8',
    timeout: scaled(120_000),
  });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

export interface ServerProcess {
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** The JSON log lines written so far. */
  logs(): Array<Record<string, any>>;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  hasExited(): boolean;
  /** The URL of the `listening` log line; rejects when the process exits first. */
  ready: Promise<string>;
  /** SIGTERM; resolves true when it exited within `withinMs`, else kills it and resolves false. */
  stop(withinMs?: number): Promise<boolean>;
}

const running = new Set<ServerProcess>();

/** Starts `ecpds-edge serve` (extra arguments after `serve`). Kill them all with `killAll`. */
export function startServer(env: Record<string, string | undefined>, args: string[] = []): ServerProcess {
  return startCommand('serve', args, env, 'listening');
}

/** Starts `ecpds-edge mover`; `ready` resolves once it has started (its url is empty). */
export function startMoverProcess(env: Record<string, string | undefined>, args: string[] = []): ServerProcess {
  return startCommand('mover', args, env, 'mover started');
}

function startCommand(command: string, args: string[], env: Record<string, string | undefined>, readyMsg: string) {
  const child = spawn(process.execPath, [BIN, command, ...args], {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  let done = false;
  child.stdout!.setEncoding('utf8').on('data', (c: string) => void (text += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => void (text += c));
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      done = true;
      resolve(code ?? signal ?? 'unknown');
    });
  });
  const logs = () =>
    text.split('\n').flatMap((l) => {
      if (!l.startsWith('{')) return [];
      try {
        return [JSON.parse(l) as Record<string, any>];
      } catch {
        return [];
      }
    });
  const ready = new Promise<string>((resolve, reject) => {
    const poll = setInterval(() => {
      const listening = logs().find((l) => l.msg === readyMsg);
      if (listening) {
        clearInterval(poll);
        resolve((listening.url as string | undefined) ?? '');
      } else if (done) {
        clearInterval(poll);
        reject(new Error(`${command} exited before it was ready:\n${text}`));
      }
    }, 50);
  });
  ready.catch(() => undefined);
  const proc: ServerProcess = {
    child,
    output: () => text,
    logs,
    exited,
    hasExited: () => done,
    ready,
    async stop(withinMs = 10_000) {
      if (done) return true;
      child.kill('SIGTERM');
      const timer = new Promise<'late'>((r) => setTimeout(() => r('late'), scaled(withinMs)).unref());
      if ((await Promise.race([exited, timer])) !== 'late') return true;
      child.kill('SIGKILL');
      await exited;
      return false;
    },
  };
  running.add(proc);
  void exited.then(() => running.delete(proc));
  return proc;
}

/** Kills every server still running (for afterAll, also after a failed test). */
export async function killAll() {
  const left = [...running];
  for (const p of left) p.child.kill('SIGKILL');
  await Promise.all(left.map((p) => p.exited));
}

export interface Reply {
  status: number;
  text: string;
  json: any;
}

/** One request to a started server; self-signed certificates are accepted. */
export function request(url: string, method: string, p: string, headers: Record<string, string> = {}): Promise<Reply> {
  const target = new URL(p, url);
  const lib = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const r = lib.request(
      target,
      { method, headers, rejectUnauthorized: false, timeout: scaled(30_000), agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => void (text += c));
        res.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, text, json });
        });
      },
    );
    r.on('timeout', () => r.destroy(new Error('request timed out')));
    r.on('error', reject);
    r.end();
  });
}

export const basic = (username: string, secret: string) =>
  `Basic ${Buffer.from(`${username}:${secret}`).toString('base64')}`;
