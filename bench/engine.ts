/**
 * The dissemination engine's figures (BENCHMARKS.md, "Dissemination engine"), against a local
 * OpenSSH sshd (needs root and /usr/sbin/sshd) and Postgres (BENCH_DATABASE_URL), with OpenSSH's
 * own clients as baselines in the same run:
 *
 * - small files: BENCH_ENGINE_FILES (500) files of 64 KiB registered for a stopped destination,
 *   then delivered by one `ecpds-edge mover` process (concurrency 8) once the destination starts;
 *   baseline `sftp -b` putting the same files;
 * - one 1 GiB file delivered by that mover, three times; baseline `scp` of the same file after each;
 * - put → DONE of a 1 MiB file on an idle system, with the mover embedded as `npm start` runs it;
 * - the claim and the due look at 1,000,000 transfers over 10,000 destinations (bench/claims.ts);
 * - the small files again on the embedded database (PGlite) with the embedded mover.
 */
import { spawn } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { restore } from '../core/backups/handlers.ts';
import { parseBackupBody } from '../core/backups/schema.ts';
import { put } from '../core/data-files/handlers.ts';
import { startMover } from '../core/dissemination/mover.ts';
import { setDestinationStatus } from '../core/dissemination/operator.ts';
import type { Ports } from '../core/ports.ts';
import { type DbHandle, openPostgres } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { MOVERS_CHANNEL } from '../functions/node/runtime.ts';
import { nodeSourceProber, nodeSourceReader } from '../functions/node/sources.ts';
import { nodeTransferMethods } from '../functions/transfer-methods/index.ts';
import { startSshd } from '../test/support/servers/sshd.ts';
import { claimBenchmark } from './claims.ts';
import { startRoundTripCounter } from './pg-round-trips.ts';
import {
  benchPorts,
  log,
  machine,
  median,
  postgresCpu,
  sleep,
  spawnMover,
  stopped,
  writeBenchFile,
} from './support.ts';
import { testMethodThroughput } from './test-method-movers.ts';

const FILES = Number(process.env.BENCH_ENGINE_FILES ?? 500);
const SMALL = 64 * 1024;
const LARGE = Number(process.env.BENCH_ENGINE_LARGE_BYTES ?? 1024 * 1024 * 1024);
const LATENCY_SAMPLES = 30;
const LARGE_PAIRS = Number(process.env.BENCH_ENGINE_LARGE_PAIRS ?? 3);
/** Only the small files through the mover process, printed and not written: a quick look while working. */
const SMALL_ONLY = !!process.env.BENCH_ENGINE_SMALL_ONLY;
const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const SSH_OPTIONS = ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR'];

// BENCH_ONLY picks scenarios by name: these run under `engine` (or nothing given).
if (process.env.BENCH_ONLY && !'dissemination engine'.includes(process.env.BENCH_ONLY.toLowerCase())) process.exit(0);
const sshd = await startSshd();
const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-engine-')));
const sources = path.join(work, 'src');
fs.mkdirSync(sources);
const rows: string[][] = [];
/** The targets: what was measured, and whether it is met. */
const targets: Array<[target: string, measured: string, met: boolean]> = [];
const admin = postgres(PG.href, { max: 1, onnotice: () => undefined });

function portsOn(handle: DbHandle, wakeMovers?: () => void): Ports {
  return benchPorts(handle, {
    sources: nodeSourceProber({ roots: [sources], hosts: [], timeoutMs: 5000 }),
    wakeMovers,
  });
}

async function freshPostgres(name: string) {
  await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.unsafe(`create database ${name}`);
  // Every statement's duration in the server's log, to see where Postgres spends its time.
  if (process.env.BENCH_LOG_STATEMENTS) await admin.unsafe(`alter database ${name} set log_min_duration_statement = 0`);
  const url = new URL(PG);
  url.pathname = `/${name}`;
  const handle = openPostgres(url.href, { max: 4 });
  await migrate(handle);
  return { url: url.href, handle };
}

/** An SFTP destination on the bench sshd, stored stopped (INIT) unless `start`. */
async function sftpDestination(ports: Ports, name: string, dir: string, start = false) {
  const backup = parseBackupBody({
    backup: {
      methods: [
        { name: 'sftp', ectransModuleName: 'sftp', active: true, ectransModule: { name: 'sftp', active: true } },
      ],
      destinations: [
        {
          destination: { name, countryIso: 'gb', type: 1, maxConnections: 8 },
          associations: [
            {
              priority: 0,
              host: {
                nickname: name.toLowerCase(),
                type: 'Dissemination',
                active: true,
                transferMethodName: 'sftp',
                host: `127.0.0.1:${sshd.port}`,
                login: sshd.user,
                passwd: sshd.password,
                dir,
                maxConnections: 8,
                data: '',
              },
            },
          ],
        },
      ],
    },
  });
  if (!backup.ok) throw new Error(backup.problem);
  await ports.repos.transaction((repos) =>
    restore({ ports, requestId: 'bench', caller: null }, repos, backup.backup, false),
  );
  if (start) await setDestinationStatus(ports, 'bench', name, 'start');
}

const register = (ports: Ports, destination: string, source: string, target = path.basename(source)) =>
  put({
    ctx: { ports, requestId: 'bench', caller: { username: 'bench', showSensitiveInfo: false } },
    input: { destination, source, target },
  } as Parameters<typeof put>[0]);

async function allDone(handle: DbHandle, destination: string, count: number, timeoutMs = 600_000) {
  const sql = handle.db;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const rows = (await sql.execute(
      `select count(*)::int as n from data_transfers where destination = '${destination}' and status = 'DONE'`,
    )) as unknown as Array<{ n: number }> | { rows: Array<{ n: number }> };
    const n = Number((Array.isArray(rows) ? rows : rows.rows)[0]?.n ?? 0);
    if (n === count) return;
    if (Date.now() > until) throw new Error(`${destination}: ${n} of ${count} DONE`);
    await sleep(20);
  }
}

function run(command: string, args: string[], input = ''): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${stderr}`))));
    child.stdin.end(input);
  });
}
async function seconds(work: () => Promise<void>) {
  const started = performance.now();
  await work();
  return (performance.now() - started) / 1000;
}

function smallFiles(prefix: string) {
  return Array.from({ length: FILES }, (_, i) => {
    const file = path.join(sources, `${prefix}${String(i).padStart(4, '0')}.bin`);
    fs.writeFileSync(file, randomFillSync(Buffer.alloc(SMALL)));
    return file;
  });
}

const moverProcess = (url: string, name: string) =>
  spawnMover(url, name, { concurrency: 8, sourceRoots: sources, work });

/** Small files and the large file through a mover process on Postgres, with OpenSSH's clients. */
async function throughMoverProcess() {
  const database = `ecpds_bench_engine_${process.pid}`;
  const { url, handle } = await freshPostgres(database);
  const ports = portsOn(handle);
  const files = smallFiles('s');
  const dir = sshd.scratch('engine-');
  await sftpDestination(ports, 'SMALL', dir);
  for (const file of files) await register(ports, 'SMALL', file);
  // The mover reaches Postgres through a proxy that counts its round trips at the wire.
  const counter = await startRoundTripCounter({ host: PG.hostname, port: Number(PG.port || 5432) });
  const counted = new URL(url);
  counted.port = String(counter.port);
  const mover = moverProcess(counted.href, 'bench');
  await sleep(1500);
  const tripsBefore = counter.roundTrips();
  const cpuBefore = postgresCpu(database);
  const ours = await seconds(async () => {
    await setDestinationStatus(ports, 'bench', 'SMALL', 'start');
    await handle.signals!.notify(MOVERS_CHANNEL);
    await allDone(handle, 'SMALL', FILES);
  });
  const tripsPerFile = (counter.roundTrips() - tripsBefore) / FILES;
  const postgresUsPerFile = (postgresCpu(database) - cpuBefore) / FILES;
  const batch = sshd.scratch('batch-');
  const sftpB = await seconds(() =>
    run(
      'sftp',
      ['-q', '-i', sshd.privateKeyFile, '-P', String(sshd.port), ...SSH_OPTIONS, '-b', '-', `${sshd.user}@127.0.0.1`],
      files.map((f) => `put ${f} ${batch}/${path.basename(f)}`).join('\n'),
    ),
  );
  const what = `${FILES} files of 64 KiB`;
  rows.push([
    'mover process on Postgres, SFTP to the local sshd (8 at a time)',
    what,
    `${rate(FILES, ours)} transfers/s`,
  ]);
  rows.push(['baseline: OpenSSH `sftp -b`, one process, same files', what, `${rate(FILES, sftpB)} files/s`]);
  rows.push([
    'the same mover run: its database round trips per delivered file (counted at the wire), Postgres CPU per file',
    what,
    `${tripsPerFile.toFixed(1)} round trips, ${Math.round(postgresUsPerFile)} µs`,
  ]);
  targets.push([
    'Small files: one mover ≥ 50% of `sftp -b`, 64 KiB to the local sshd',
    `${Math.round((100 * sftpB) / ours)}%`,
    sftpB / ours >= 0.5,
  ]);
  targets.push([
    'Bookkeeping: ≤ 6 database round trips per delivered file',
    tripsPerFile.toFixed(1),
    tripsPerFile <= 6,
  ]);
  if (!SMALL_ONLY) await largeFile(ports, handle);
  await stopped(mover);
  await counter.stop();
  await handle.close();
  await admin.unsafe(`drop database if exists ecpds_bench_engine_${process.pid} with (force)`);
}

/** One large file through the same mover process, next to OpenSSH's scp with two ciphers. */
async function largeFile(ports: Ports, handle: DbHandle) {
  const large = path.join(sources, 'large.bin');
  const chunk = randomFillSync(Buffer.alloc(16 * 1024 * 1024));
  const out = fs.openSync(large, 'w');
  for (let at = 0; at < LARGE; at += chunk.byteLength)
    fs.writeSync(out, chunk, 0, Math.min(chunk.byteLength, LARGE - at));
  // On disk before anything is timed: otherwise its writeback loads whichever transfer runs first.
  fs.fsyncSync(out);
  fs.closeSync(out);
  const largeDir = sshd.scratch('large-');
  await sftpDestination(ports, 'LARGE', largeDir, true);
  const scpArgs = ['-q', '-i', sshd.privateKeyFile, '-P', String(sshd.port), ...SSH_OPTIONS];
  const scpTo = (dir: string, cipher: string[] = []) =>
    seconds(() => run('scp', [...scpArgs, ...cipher, large, `${sshd.user}@127.0.0.1:${dir}/`]));
  // Paired runs, each mover send next to the scp runs it is compared with: the shared machine's
  // speed drifts more between minutes than within a pair. The shares are the pairs' medians.
  const runs: Array<{ ours: number; scp: number; scpGcm: number }> = [];
  for (let pair = 1; pair <= LARGE_PAIRS; pair++) {
    const ours = await seconds(async () => {
      await register(ports, 'LARGE', large, `large-${pair}.bin`);
      await handle.signals!.notify(MOVERS_CHANNEL);
      await allDone(handle, 'LARGE', pair);
    });
    fs.rmSync(path.join(largeDir, `large-${pair}.bin`));
    const scpDir = sshd.scratch('scp-');
    const scp = await scpTo(scpDir);
    const scpGcm = await scpTo(scpDir, ['-c', 'aes128-gcm@openssh.com']);
    fs.rmSync(scpDir, { recursive: true });
    runs.push({ ours, scp, scpGcm });
  }
  fs.rmSync(large);
  const size = `${(LARGE / 2 ** 30).toFixed(LARGE % 2 ** 30 ? 2 : 0)} GiB`;
  const load = `${size}, median of ${LARGE_PAIRS}`;
  rows.push(['mover process on Postgres, SFTP, put → DONE', load, mbps(LARGE, median(runs.map((r) => r.ours)))]);
  rows.push(['baseline: OpenSSH `scp` (default cipher)', load, mbps(LARGE, median(runs.map((r) => r.scp)))]);
  rows.push([
    'baseline: OpenSSH `scp -c aes128-gcm@openssh.com`',
    load,
    mbps(LARGE, median(runs.map((r) => r.scpGcm))),
  ]);
  const share = median(runs.map((r) => r.scp / r.ours));
  const shareGcm = median(runs.map((r) => r.scpGcm / r.ours));
  targets.push([
    `A large file (${size}): ≥ 80% of scp with the cipher the mover negotiates (AES-GCM), to the same sshd`,
    `${Math.round(100 * shareGcm)}%`,
    shareGcm >= 0.8,
  ]);
  targets.push([
    `A large file (${size}): ≥ 80% of scp with its default cipher`,
    `${Math.round(100 * share)}%`,
    share >= 0.8,
  ]);
}

/** A mover in this process, as `npm start` embeds one, with the settings' defaults. */
const embeddedMover = (ports: Ports) =>
  startMover(
    {
      ports,
      methods: nodeTransferMethods({ fileRoots: [] }),
      sources: nodeSourceReader({ roots: [sources], hosts: [] }),
    },
    { name: 'embedded', concurrency: 8, leaseMs: 60_000, heartbeatMs: 15_000, pollMs: 1000 },
  );

/** Put → DONE of a 1 MiB file, one at a time, with the mover in the process that takes the put. */
async function latency() {
  const { handle } = await freshPostgres(`ecpds_bench_latency_${process.pid}`);
  let wake = () => {};
  const ports = portsOn(handle, () => wake());
  await sftpDestination(ports, 'LATENCY', sshd.scratch('latency-'), true);
  const mover = embeddedMover(ports);
  wake = mover.wake;
  const file = path.join(sources, 'mib.bin');
  fs.writeFileSync(file, randomFillSync(Buffer.alloc(1024 * 1024)));
  const samples: number[] = [];
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    const { id } = await register(ports, 'LATENCY', file);
    const started = performance.now();
    for (;;) {
      const rows = (await handle.db.execute(
        `select status from data_transfers where data_file_id = ${id}`,
      )) as unknown as Array<{ status: string }>;
      if (rows[0]?.status === 'DONE') break;
      await sleep(2);
    }
    samples.push(performance.now() - started);
    // Same target again: the next put replaces the delivered file under a new data file.
    await handle.db.execute(`update data_transfers set status = 'STOP' where data_file_id = ${id}`);
    await sleep(100);
  }
  await mover.stop(5000);
  await handle.close();
  await admin.unsafe(`drop database if exists ecpds_bench_latency_${process.pid} with (force)`);
  const sorted = samples.sort((a, b) => a - b);
  const p50 = sorted[Math.floor(sorted.length / 2)]!;
  targets.push(['Latency: put → DONE of 1 MiB on an idle system, p50 ≤ 300 ms', `${p50.toFixed(0)} ms`, p50 <= 300]);
  rows.push([
    'put → DONE, 1 MiB over SFTP, idle, embedded mover (Postgres)',
    `${LATENCY_SAMPLES} puts, one at a time`,
    `p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms, p99 ${sorted.at(-1)!.toFixed(0)} ms`,
  ]);
}

/** The small files on the embedded database, delivered by a mover in the same process. */
async function onPglite() {
  const { openPglite } = await import('../db/pglite.ts');
  const handle = await openPglite(path.join(work, 'pgdata'));
  await migrate(handle);
  let wake = () => {};
  const ports = portsOn(handle, () => wake());
  const files = smallFiles('p');
  await sftpDestination(ports, 'PGLITE', sshd.scratch('pglite-'));
  for (const file of files) await register(ports, 'PGLITE', file);
  const mover = embeddedMover(ports);
  wake = mover.wake;
  const took = await seconds(async () => {
    await setDestinationStatus(ports, 'bench', 'PGLITE', 'start');
    ports.wakeMovers();
    await allDone(handle, 'PGLITE', FILES);
  });
  await mover.stop(5000);
  await handle.close();
  rows.push([
    'embedded mover on PGlite (npm start), SFTP (8 at a time)',
    `${FILES} files of 64 KiB`,
    `${rate(FILES, took)} transfers/s`,
  ]);
}

const rate = (n: number, s: number) => Math.round(n / s);
const mbps = (bytes: number, s: number) => `${(bytes / s / 1e6).toFixed(0)} MB/s`;

try {
  log('engine: small and large files through a mover process');
  await throughMoverProcess();
  if (SMALL_ONLY) {
    console.log(rows.map((r) => r.join(' | ')).join('\n'));
    console.log(targets.map((t) => t.join(' | ')).join('\n'));
  } else {
    await theRest();
  }
} finally {
  await sshd.stop();
  await admin.end();
  fs.rmSync(work, { recursive: true, force: true });
}
process.exit(0);

/** Everything after the mover process's files: latency, PGlite, the test method, claims at scale. */
async function theRest() {
  log('engine: put → DONE latency');
  await latency();
  log('engine: PGlite with the embedded mover');
  await onPglite();
  log('engine: four movers with the test method');
  const tm = await testMethodThroughput(admin, PG, { movers: 4, transfers: 10_000, destinations: 32 });
  rows.push([
    `${tm.movers} mover processes on Postgres, \`test\` method (bookkeeping only), ${tm.destinations} destinations`,
    `${tm.transfers.toLocaleString('en')} transfers`,
    `${tm.perSecond} transfers/s; ${tm.roundTripsPerTransfer.toFixed(1)} round trips and ` +
      `${Math.round(tm.postgresUsPerTransfer)} µs of Postgres CPU per transfer`,
  ]);
  targets.push([
    'Bookkeeping: 4 movers with the `test` method ≥ 2,000 transfers/s',
    `${tm.perSecond}/s`,
    tm.perSecond >= 2000,
  ]);
  log('engine: claims at 1,000,000 transfers');
  const claimDb = `ecpds_bench_claims_${process.pid}`;
  await admin.unsafe(`create database ${claimDb}`);
  const claimUrl = new URL(PG);
  claimUrl.pathname = `/${claimDb}`;
  const claims = await claimBenchmark(claimUrl.href);
  await admin.unsafe(`drop database if exists ${claimDb} with (force)`);
  const scene =
    `${claims.transfers.toLocaleString('en')} transfers (${claims.later.toLocaleString('en')} waiting for a later time, ` +
    `${claims.waiting.toLocaleString('en')} due), ${claims.destinations.toLocaleString('en')} started destinations, ` +
    `${claims.dueDestinations} with due work`;
  rows.push([
    `claim (one transaction) at ${scene}`,
    `${claims.claim.samples} claims`,
    `p50 ${claims.claim.p50.toFixed(1)} ms, p99 ${claims.claim.p99.toFixed(1)} ms`,
  ]);
  rows.push([
    'due destinations (a mover looking for work), same data',
    `${claims.due.samples} looks`,
    `p50 ${claims.due.p50.toFixed(1)} ms, p99 ${claims.due.p99.toFixed(1)} ms`,
  ]);
  targets.push([`Claim: p99 ≤ 10 ms, ${scene}`, `${claims.claim.p99.toFixed(1)} ms`, claims.claim.p99 <= 10]);
  targets.push(['Due look: p99 ≤ 5 ms, same data', `${claims.due.p99.toFixed(1)} ms`, claims.due.p99 <= 5]);
  const table = [
    '| Scenario | Load | Result |',
    '| --- | --- | --- |',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
  const goals = [
    '| Target | Measured | |',
    '| --- | --- | --- |',
    ...targets.map(([t, m, met]) => `| ${t} | ${m} | ${met ? 'met' : 'not met'} |`),
  ].join('\n');
  if (process.env.BENCH_ONLY) console.log(`${table}\n\n${goals}`);
  else {
    writeBenchFile(
      `## Dissemination engine\n\n${machine()}\n\n` +
        'From `npm run bench` (bench/engine.ts): a local OpenSSH sshd and Postgres on this machine, ' +
        "OpenSSH's own clients as baselines in the same run.\n\n" +
        `${table}\n\n${goals}`,
    );
  }
}
