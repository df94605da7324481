/**
 * `npm run chaos`: four `ecpds-edge mover` processes on Postgres deliver CHAOS_FILES files (default
 * 1,000, registered over CHAOS_SECONDS, default 60) to `file` hosts while one mover is SIGKILLed
 * every CHAOS_KILL_SECONDS (default 10) and replaced. It passes when every transfer ends DONE
 * with exactly one DONE, no temporary file is left, every delivered file's MD5 equals its
 * source's, and no destination or host ever had more transfers in EXEC than its maxConnections.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { restore } from '../core/backups/handlers.ts';
import { parseBackupBody } from '../core/backups/schema.ts';
import { put } from '../core/data-files/handlers.ts';
import { setDestinationStatus } from '../core/dissemination/operator.ts';
import { openPostgres } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { nodeSourceProber } from '../functions/node/sources.ts';
import { benchPorts, log, ROOT, secretKey, sleep } from './support.ts';

const FILES = Number(process.env.CHAOS_FILES ?? 1000);
const SECONDS = Number(process.env.CHAOS_SECONDS ?? 60);
const KILL_SECONDS = Number(process.env.CHAOS_KILL_SECONDS ?? 10);
const MOVERS = 4;
const DESTINATIONS = 10;
const DESTINATION_MAX = 3;
const HOST_MAX = 2;
const FILE_BYTES = 64 * 1024;
const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-chaos-')));
const sources = path.join(tmp, 'src');
const delivered = path.join(tmp, 'delivered');
fs.mkdirSync(sources);
fs.mkdirSync(delivered);
const database = `ecpds_chaos_${process.pid}`;
const url = new URL(PG);
url.pathname = `/${database}`;

// Sources come from a slow HTTP server (about 200 ms a file), so that kills find sends in flight.
const sourceServer = http.createServer((req, res) => {
  const file = path.join(sources, path.basename(new URL(req.url ?? '/', 'http://x').pathname));
  if (!fs.existsSync(file)) return void res.writeHead(404).end();
  const content = fs.readFileSync(file);
  res.writeHead(200, { 'content-length': content.byteLength });
  if (req.method === 'HEAD') return void res.end();
  const step = Math.ceil(content.byteLength / 8);
  let at = 0;
  const next = () => {
    if (at >= content.byteLength) return void res.end();
    res.write(content.subarray(at, at + step));
    at += step;
    setTimeout(next, 25);
  };
  next();
});
await new Promise<void>((resolve) => sourceServer.listen(0, '127.0.0.1', resolve));
const sourceHost = `127.0.0.1:${(sourceServer.address() as AddressInfo).port}`;

const admin = postgres(PG.href, { max: 1, onnotice: () => undefined });
await admin.unsafe(`create database ${database}`);
const handle = openPostgres(url.href);
const failures: string[] = [];
let exitCode = 1;
try {
  await migrate(handle);
  const ports = benchPorts(handle, {
    sources: nodeSourceProber({ roots: [], hosts: [sourceHost], timeoutMs: 5000 }),
  });
  const names = Array.from({ length: DESTINATIONS }, (_, i) => `CHAOS_${i + 1}`);
  const backup = parseBackupBody({
    backup: {
      methods: [
        {
          name: 'file',
          ectransModuleName: 'file',
          active: true,
          ectransModule: { name: 'file', classe: null, archive: null, active: true },
        },
      ],
      destinations: names.map((name, i) => ({
        destination: { name, countryIso: 'gb', type: 1, maxConnections: DESTINATION_MAX },
        associations: [
          {
            priority: 0,
            host: {
              hostid: i + 1,
              nickname: name.toLowerCase(),
              type: 'Dissemination',
              active: true,
              transferMethodName: 'file',
              host: 'localhost',
              dir: path.join(delivered, name),
              maxConnections: HOST_MAX,
              data: '',
            },
          },
        ],
      })),
    },
  });
  if (!backup.ok) throw new Error(backup.problem);
  await ports.repos.transaction((repos) =>
    restore({ ports, requestId: 'chaos', caller: null }, repos, backup.backup, false),
  );
  for (const name of names) await setDestinationStatus(ports, 'chaos', name, 'start');

  const env = {
    ...process.env,
    DATABASE_URL: url.href,
    ECPDS_SECRET_KEY: secretKey,
    ECPDS_SOURCE_HOSTS: sourceHost,
    ECPDS_FILE_HOST_ROOTS: delivered,
    ECPDS_MOVER_LEASE_SECONDS: '3',
    ECPDS_MOVER_HEARTBEAT_SECONDS: '1',
    ECPDS_MOVER_POLL_MS: '100',
    ECPDS_EVENT_LOG: path.join(tmp, 'events.log'),
    ECPDS_SWEEP_SECONDS: '0',
  };
  let spawned = 0;
  const startMover = () =>
    spawn(
      process.execPath,
      ['functions/bin/ecpds-edge.mjs', 'mover', '--name', `chaos-${++spawned}`, '--concurrency', '8'],
      { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] },
    );
  const movers: ChildProcess[] = Array.from({ length: MOVERS }, startMover);

  // The limits, sampled from what the claims count: transfers in EXEC per destination and per host.
  let mostPerDestination = 0;
  let mostPerHost = 0;
  let sampling = true;
  const sampler = (async () => {
    const sql = postgres(url.href, { max: 1, onnotice: () => undefined });
    while (sampling) {
      const rows = await sql<Array<{ destination: string; host_id: string; n: number }>>`
        select destination, host_id, count(*)::int as n from data_transfers where status = 'EXEC'
        group by grouping sets ((destination), (destination, host_id))`;
      for (const r of rows) {
        if (r.host_id === null) mostPerDestination = Math.max(mostPerDestination, r.n);
        else mostPerHost = Math.max(mostPerHost, r.n);
      }
      await sleep(20);
    }
    await sql.end();
  })();

  let kills = 0;
  const killer = setInterval(() => {
    const victim = Math.floor(Math.random() * movers.length);
    movers[victim]!.kill('SIGKILL');
    movers[victim] = startMover();
    kills++;
  }, KILL_SECONDS * 1000);

  const md5 = new Map<string, string>();
  const started = Date.now();
  log(
    `chaos: ${FILES} files over ${SECONDS} s to ${DESTINATIONS} destinations, 4 movers, a kill every ${KILL_SECONDS} s`,
  );
  for (let i = 0; i < FILES; i++) {
    const content = randomBytes(FILE_BYTES);
    const file = path.join(sources, `f${i}.bin`);
    fs.writeFileSync(file, content);
    const destination = names[i % DESTINATIONS]!;
    md5.set(path.join(delivered, destination, `day/f${i}.bin`), createHash('md5').update(content).digest('hex'));
    await put({
      ctx: { ports, requestId: 'chaos', caller: { username: 'chaos', showSensitiveInfo: false } },
      input: { destination, source: `http://${sourceHost}/f${i}.bin`, target: `day/f${i}.bin` },
    } as Parameters<typeof put>[0]);
    const due = started + ((i + 1) * SECONDS * 1000) / FILES;
    if (due > Date.now()) await sleep(due - Date.now());
  }

  const sql = postgres(url.href, { max: 1, onnotice: () => undefined });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const [row] = await sql<
      [{ left: number }]
    >`select count(*)::int as left from data_transfers where status <> 'DONE'`;
    if (row.left === 0) break;
    if (Date.now() > deadline) {
      failures.push(`${row.left} transfers not DONE two minutes after the last put`);
      break;
    }
    await sleep(200);
  }
  clearInterval(killer);
  sampling = false;
  await sampler;
  for (const m of movers) m.kill('SIGTERM');
  await Promise.all(
    movers.map((m) => new Promise((resolve) => (m.exitCode === null ? m.once('exit', resolve) : resolve(0)))),
  );

  const dones = await sql<Array<{ transfer_id: string; n: number }>>`
    select transfer_id, count(*)::int as n from transfer_history where status = 'DONE' group by transfer_id`;
  const reclaimed = await sql<[{ n: number }]>`select count(*)::int as n from transfer_history where status = 'INTR'`;
  await sql.end();
  if (dones.length !== FILES) failures.push(`${dones.length} transfers with a DONE, ${FILES} expected`);
  const twice = dones.filter((d) => d.n !== 1);
  if (twice.length > 0) failures.push(`${twice.length} transfers with more than one DONE`);
  const temporary = listFiles(delivered).filter((f) => f.endsWith('.tmp'));
  if (temporary.length > 0) failures.push(`${temporary.length} temporary files left, e.g. ${temporary[0]}`);
  const wrong = [...md5].filter(([file, sum]) => !fs.existsSync(file) || md5Of(file) !== sum);
  if (wrong.length > 0) failures.push(`${wrong.length} delivered files missing or with another MD5`);
  if (mostPerDestination > DESTINATION_MAX) failures.push(`a destination had ${mostPerDestination} in EXEC`);
  if (mostPerHost > HOST_MAX) failures.push(`a host had ${mostPerHost} in EXEC`);

  log(
    `chaos: ${FILES} files in ${((Date.now() - started) / 1000).toFixed(1)} s, ${kills} movers killed, ` +
      `${reclaimed[0].n} transfers reclaimed; most in EXEC per destination ${mostPerDestination} ` +
      `(limit ${DESTINATION_MAX}), per host ${mostPerHost} (limit ${HOST_MAX})`,
  );
  for (const f of failures) log(`chaos: FAIL ${f}`);
  exitCode = failures.length === 0 ? 0 : 1;
  log(exitCode === 0 ? 'chaos: passed' : 'chaos: failed');
} finally {
  await handle.close();
  await admin.unsafe(`drop database if exists ${database} with (force)`);
  await admin.end();
  fs.rmSync(tmp, { recursive: true, force: true });
  sourceServer.close();
}
process.exit(exitCode);

function listFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listFiles(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

function md5Of(file: string) {
  return createHash('md5').update(fs.readFileSync(file)).digest('hex');
}
