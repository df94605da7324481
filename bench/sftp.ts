/**
 * The SFTP method's speed against a local OpenSSH sshd, next to OpenSSH's own clients on the same
 * server (BENCHMARKS.md, "SFTP method"). Needs root (the sshd test user) and /usr/sbin/sshd.
 *
 *   node --import tsx bench/sftp.ts
 *
 * (a) 200 files of 64 KiB, 8 sends at a time through sftpMethod, against `sftp -b` putting the
 * same files (one process, and 8 processes of 25 files). (b) One 1 GiB file through sftpMethod
 * against scp (SFTP protocol) of the same file. Each row is the median of BENCH_RUNS (default 3).
 * BENCH_SSH2_PURE_JS=1 hides ssh2's native crypto binding, as when its install script did not run;
 * BENCH_TUNING=<chunk KiB>x<window KiB>,... adds rows for other write pipelines.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { methodOptions } from '../core/dissemination/method-options.ts';
import type { HostConnection, TransferMethod } from '../core/dissemination/methods.ts';
import { startSshd } from '../test/support/servers/sshd.ts';
import { log, machine, median } from './support.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SMALL_FILES = 200;
const SMALL_BYTES = 64 * 1024;
const CONCURRENCY = 8;
const LARGE_BYTES = 1024 * 1024 * 1024;

if (process.env.BENCH_SSH2_PURE_JS === '1') {
  // Before ssh2 loads: its crypto module falls back to Node's crypto when the binding is missing.
  const Module = createRequire(import.meta.url)('node:module') as { _load: (...args: unknown[]) => unknown };
  const load = Module._load;
  Module._load = function (request: unknown, ...rest: unknown[]) {
    if (typeof request === 'string' && request.endsWith('sshcrypto.node')) throw new Error('binding hidden');
    return load.call(this, request, ...rest);
  };
}
const { sftpMethod } = await import('../functions/transfer-methods/sftp.ts');
const { DEFAULT_TUNING, sftpRemote } = await import('../functions/transfer-methods/sftp-remote.ts');
const { connect, credentialsOf } = await import('../functions/transfer-methods/sftp-session.ts');

const sshd = await startSshd();
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-sftp-'));
const sshOptions = ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR'];
const rows: string[][] = [];

function hostFor(directory: string): HostConnection {
  return {
    hostId: 'bench',
    hostname: '127.0.0.1',
    login: sshd.user,
    password: sshd.password,
    directory,
    options: methodOptions('sftp', `127.0.0.1:${sshd.port}`, ''),
  };
}

async function timed(run: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await run();
  return (performance.now() - started) / 1000;
}

function runCommand(command: string, args: string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${stderr}`))));
    child.stdin.end(input ?? '');
  });
}

const sftpBatch = (files: string[], dir: string) =>
  runCommand(
    'sftp',
    ['-q', '-i', sshd.privateKeyFile, '-P', String(sshd.port), ...sshOptions, '-b', '-', `${sshd.user}@127.0.0.1`],
    files.map((file) => `put ${file} ${dir}/${path.basename(file)}`).join('\n'),
  );

async function sendAll(method: TransferMethod, files: string[], dir: string, concurrency: number) {
  const queue = [...files];
  const host = hostFor(dir);
  const worker = async () => {
    for (let file = queue.shift(); file; file = queue.shift()) {
      const source = fs.createReadStream(file);
      await method.send(host, { target: path.basename(file), size: fs.statSync(file).size }, source, live());
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}
const live = () => new AbortController().signal;

function check(dir: string, count: number, bytes: number) {
  const names = fs.readdirSync(dir);
  if (names.length !== count) throw new Error(`${dir}: ${names.length} files, expected ${count}`);
  for (const name of names) {
    if (fs.statSync(path.join(dir, name)).size !== bytes) throw new Error(`${dir}/${name}: wrong size`);
  }
}

async function smallFiles() {
  const sources = path.join(work, 'small');
  fs.mkdirSync(sources);
  const files = Array.from({ length: SMALL_FILES }, (_, i) => {
    const file = path.join(sources, `f${String(i).padStart(3, '0')}.bin`);
    fs.writeFileSync(file, randomFillSync(Buffer.alloc(SMALL_BYTES)));
    return file;
  });
  const rate = (seconds: number[]) => `${Math.round(SMALL_FILES / median(seconds))} files/s`;
  const ours: number[] = [];
  const one: number[] = [];
  const eight: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const method = sftpMethod();
    const dir = sshd.scratch('bench-');
    ours.push(await timed(() => sendAll(method, files, dir, CONCURRENCY)));
    await method.close();
    check(dir, SMALL_FILES, SMALL_BYTES);

    const batch = sshd.scratch('bench-');
    one.push(await timed(() => sftpBatch(files, batch)));
    check(batch, SMALL_FILES, SMALL_BYTES);

    const parallel = sshd.scratch('bench-');
    const slices = Array.from({ length: CONCURRENCY }, (_, k) => files.filter((_, i) => i % CONCURRENCY === k));
    eight.push(await timed(async () => void (await Promise.all(slices.map((s) => sftpBatch(s, parallel))))));
    check(parallel, SMALL_FILES, SMALL_BYTES);
  }
  const what = `${SMALL_FILES} files of 64 KiB`;
  rows.push(['sftpMethod, 8 sends at a time (8 sessions, reused)', what, rate(ours)]);
  rows.push(['OpenSSH `sftp -b`, one process', what, rate(one)]);
  rows.push(['OpenSSH `sftp -b`, 8 processes of 25 files', what, rate(eight)]);
}

async function largeFile() {
  const file = path.join(work, 'large.bin');
  const block = Buffer.alloc(8 * 1024 * 1024);
  const fd = fs.openSync(file, 'w');
  for (let at = 0; at < LARGE_BYTES; at += block.length) fs.writeSync(fd, randomFillSync(block));
  fs.closeSync(fd);
  const speed = (seconds: number[]) => `${Math.round(LARGE_BYTES / 1e6 / median(seconds))} MB/s`;
  const tunings = [DEFAULT_TUNING, ...parseTunings(process.env.BENCH_TUNING ?? '')];
  const ours = tunings.map(() => [] as number[]);
  const bare: number[] = [];
  const scp: number[] = [];
  const scpGcm: number[] = [];
  const scpArgs = ['-q', '-i', sshd.privateKeyFile, '-P', String(sshd.port), ...sshOptions];
  for (let run = 0; run < RUNS; run++) {
    for (const [i, tuning] of tunings.entries()) {
      const method = sftpMethod({ tuning });
      const dir = sshd.scratch('bench-');
      ours[i]!.push(await timed(() => sendAll(method, [file], dir, 1)));
      await method.close();
      check(dir, 1, LARGE_BYTES);
      fs.rmSync(dir, { recursive: true });
    }
    const dir = sshd.scratch('bench-');
    bare.push(await timed(() => writeOnly(file, dir)));
    check(dir, 1, LARGE_BYTES);
    fs.rmSync(dir, { recursive: true });
    for (const [seconds, extra] of [
      [scp, []],
      [scpGcm, ['-c', 'aes128-gcm@openssh.com']],
    ] as const) {
      const dir = sshd.scratch('bench-');
      seconds.push(
        await timed(() => runCommand('scp', [...scpArgs, ...extra, file, `${sshd.user}@127.0.0.1:${dir}/`])),
      );
      check(dir, 1, LARGE_BYTES);
      fs.rmSync(dir, { recursive: true });
    }
  }
  fs.rmSync(file);
  for (const [i, tuning] of tunings.entries()) {
    const pipeline = `${tuning.chunkBytes / 1024} KiB writes, ${tuning.windowBytes / 1024} KiB in flight`;
    rows.push([`sftpMethod (${pipeline})`, '1 GiB', speed(ours[i]!)]);
  }
  rows.push(['its write path alone (no MD5, no size check, no rename)', '1 GiB', speed(bare)]);
  rows.push(['OpenSSH `scp` (default cipher, chacha20-poly1305)', '1 GiB', speed(scp)]);
  rows.push(['OpenSSH `scp -c aes128-gcm@openssh.com`', '1 GiB', speed(scpGcm)]);
}

/** The SFTP session and write path without deliverFile's MD5 and steps, to tell their costs apart. */
async function writeOnly(file: string, dir: string) {
  const host = hostFor(dir);
  const session = await connect(host, credentialsOf(host), live());
  const remote = sftpRemote(session, live());
  try {
    await remote.write(`${dir}/${path.basename(file)}`, fs.createReadStream(file), live());
  } finally {
    remote.dispose();
    session.end();
  }
}

function parseTunings(text: string) {
  return text
    .split(',')
    .filter((t) => t.trim() !== '')
    .map((t) => {
      const [chunk, window] = t.split('x').map(Number);
      return { chunkBytes: chunk! * 1024, windowBytes: window! * 1024 };
    });
}

try {
  log(`sshd on port ${sshd.port}; ssh2 binding ${process.env.BENCH_SSH2_PURE_JS === '1' ? 'hidden' : 'as installed'}`);
  await smallFiles();
  await largeFile();
} finally {
  await sshd.stop();
  fs.rmSync(work, { recursive: true, force: true });
}
const openssh = spawnSync('ssh', ['-V'], { encoding: 'utf8' }).stderr.trim();
console.log(`${machine()}\n${openssh}; median of ${RUNS} runs.\n`);
console.log('| Client | Load | Speed |\n| --- | --- | --- |');
for (const row of rows) console.log(`| ${row.join(' | ')} |`);
