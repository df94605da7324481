/**
 * `npm run bench`: the service under load next to baselines measured in the same run, on
 * Postgres and on the embedded PGlite, at two data sizes; results go to BENCHMARKS.md.
 * Loopback only, every load bounded in time (BENCH_SECONDS, default 10).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { generateSecret, hashGeneratedSecret } from '../../core/crypto.ts';
import { openPostgres, type DbHandle } from '../../db/client.ts';
import { migrate } from '../../db/migrate.ts';
import { openPglite } from '../../db/pglite.ts';
import { apiClients } from '../../db/schema.ts';
import { loadTls } from '../../functions/node/tls.ts';
import { metadataBody, notificationsOf, seed, type Scale } from './seed.ts';

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const ROOT = path.resolve(new URL('../..', import.meta.url).pathname);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-'));
const LARGE: Scale = { destinations: 10_000, cycles: 250, metadataFields: 100 };
const SMALL: Scale = { destinations: 1_000, cycles: 25, metadataFields: 10 };
const secret = generateSecret();
const auth = `Basic ${Buffer.from(`bench:${secret}`).toString('base64')}`;
const key = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64');

interface Row { flavour: string; scenario: string; data: string; connections: number; rps: number; p50: number; p99: number; errors: number; rssMiB: number }
const rows: Row[] = [];
const log = (m: string) => process.stderr.write(`${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let port = 19500;

async function prepare(handle: DbHandle, scale: Scale) {
  await migrate(handle);
  await seed(handle.db, scale);
  const now = new Date();
  await handle.db.insert(apiClients).values({ username: 'bench', secretHash: hashGeneratedSecret(secret), permissions: ['.*'], origin: 'cli', createdAt: now, updatedAt: now });
  await handle.close();
}

function start(cmd: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, cmd, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
}

async function waitFor(url: string) {
  for (let i = 0; i < 240; i++) {
    try {
      if ((await fetch(url)).status < 500) return;
    } catch { /* not up yet */ }
    await sleep(250);
  }
  throw new Error(`no answer from ${url}`);
}

const rssOf = (pid: number) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
};

async function load(flavour: string, scenario: string, data: string, base: string, pid: number, opts: { path: string; method?: string; body?: string; connections: number; vary?: (n: number) => string }) {
  let n = 0;
  const result = await autocannon({
    url: base,
    connections: opts.connections,
    duration: SECONDS,
    headers: { authorization: auth, ...(opts.body && { 'content-type': 'application/json' }) },
    requests: [{ method: (opts.method ?? 'GET') as 'GET', path: opts.path, body: opts.body, ...(opts.vary && { setupRequest: (req: object) => ({ ...req, path: opts.vary!(++n) }) }) } as autocannon.Request],
  });
  const row = {
    flavour, scenario, data, connections: opts.connections, rps: Math.round(result.requests.average),
    p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.timeouts + result.non2xx, rssMiB: Math.round(rssOf(pid)),
  };
  rows.push(row);
  log(`${flavour} ${scenario} ${data}: ${row.rps} req/s p50 ${row.p50} ms p99 ${row.p99} ms errors ${row.errors}`);
}

async function stop(child: ChildProcess) {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

async function appScenarios(flavour: string, label: string, scale: Scale, env: Record<string, string>, withThroughput: boolean) {
  const p = port++;
  const child = start(['functions/bin/ecpds-edge.mjs', 'serve'], { ...env, HOST: '127.0.0.1', PORT: String(p), ECPDS_SECRET_KEY: key, ECPDS_DEMO: '0', ECPDS_SWEEP_SECONDS: '0', ECPDS_SOURCE_ROOTS: path.join(tmp, 'src'), TLS_CERT_FILE: path.join(tmp, 'tls/cert.pem'), TLS_KEY_FILE: path.join(tmp, 'tls/key.pem') });
  const base = `https://127.0.0.1:${p}`;
  await waitFor(`${base}/v1/version`);
  const pid = child.pid!;
  const dests = `${scale.destinations.toLocaleString('en')} destinations`;
  if (withThroughput) {
    await load(flavour, 'GET destination/type/list (authenticated)', '-', base, pid, { path: '/v1/destination/type/list', connections: 50 });
    await load(flavour, 'GET datafile/put', '-', base, pid, { path: '/', connections: 10, vary: (n) => `/v1/datafile/put?destination=BENCH_META&source=${encodeURIComponent(path.join(tmp, 'src/file.bin'))}&uniquename=${label}-${n}-${Date.now()}` });
  }
  await load(flavour, 'GET destination/list', dests, base, pid, { path: '/v1/destination/list', connections: 4 });
  await load(flavour, 'GET monitoring/summary', `${notificationsOf(scale).toLocaleString('en')} notifications`, base, pid, { path: '/v1/monitoring/summary', connections: 4 });
  await load(flavour, 'PUT destination/{name}/metadata', `${scale.metadataFields} fields`, base, pid, { path: '/v1/destination/BENCH_META/metadata', method: 'PUT', body: metadataBody(scale.metadataFields), connections: 4 });
  await stop(child);
}

async function main() {
  fs.mkdirSync(path.join(tmp, 'src'), { recursive: true });
  fs.writeFileSync(path.join(tmp, 'src/file.bin'), Buffer.alloc(1 << 20));
  await loadTls({ dataDir: tmp, tlsCertFile: null, tlsKeyFile: null } as never);
  const admin = postgres(PG.toString(), { max: 1, onnotice: () => undefined });
  const databases: string[] = [];
  try {
    for (const [label, scale] of [['large', LARGE], ['small', SMALL]] as const) {
      const name = `ecpds_bench_${label}_${process.pid}`;
      await admin.unsafe(`create database "${name}"`);
      databases.push(name);
      const url = new URL(PG);
      url.pathname = `/${name}`;
      log(`seeding Postgres ${label}`);
      await prepare(openPostgres(url.toString(), { max: 2 }), scale);
      if (label === 'large') {
        const p = port++;
        const baseline = start(['--import', 'tsx', 'test/bench/baseline-server.ts', String(p), path.join(tmp, 'tls/cert.pem'), path.join(tmp, 'tls/key.pem'), url.toString()], {});
        const base = `https://127.0.0.1:${p}`;
        await waitFor(`${base}/bare`);
        await load('baseline', 'bare Hono JSON route', '-', base, baseline.pid!, { path: '/bare', connections: 50 });
        await load('baseline', 'raw postgres.js INSERT', '-', base, baseline.pid!, { path: '/insert?n=x', connections: 10 });
        await load('baseline', 'raw postgres.js SELECT', '-', base, baseline.pid!, { path: '/select', connections: 10 });
        await stop(baseline);
      }
      await appScenarios('Postgres', label, scale, { DATABASE_URL: url.toString() }, label === 'large');

      log(`seeding PGlite ${label}`);
      const dir = path.join(tmp, `pglite-${label}`);
      fs.mkdirSync(dir, { recursive: true });
      await prepare(await openPglite(path.join(dir, 'pgdata')), scale);
      await appScenarios('PGlite', label, scale, { ECPDS_DATA_DIR: dir }, label === 'large');
    }
  } finally {
    for (const name of databases) await admin.unsafe(`drop database if exists "${name}" with (force)`).catch(() => undefined);
    await admin.end();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  fs.writeFileSync(path.join(ROOT, 'BENCHMARKS.md'), report());
  log('written BENCHMARKS.md');
}

function report(): string {
  const find = (flavour: string, scenario: string, data?: string) => rows.find((r) => r.flavour === flavour && r.scenario.startsWith(scenario) && (data === undefined || r.data.startsWith(data)));
  const bare = find('baseline', 'bare')!;
  const insert = find('baseline', 'raw postgres.js INSERT')!;
  const target = (ok: boolean) => (ok ? 'met' : '**missed**');
  const lines = [
    '# Benchmarks',
    '',
    `Measured by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}.`,
    `Load from autocannon in a separate process over HTTPS on loopback, ${SECONDS} s per row; server and load generator share the machine's cores. RSS is the server's peak resident memory.`,
    '',
    '| Database | Scenario | Data | Connections | req/s | p50 ms | p99 ms | Errors | RSS MiB |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.flavour} | ${r.scenario} | ${r.data} | ${r.connections} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.errors} | ${r.rssMiB} |`),
    '',
    '## Targets',
    '',
    '| Target | Measured | |',
    '|---|---|---|',
  ];
  const typeList = find('Postgres', 'GET destination/type/list');
  const put = find('Postgres', 'GET datafile/put');
  if (typeList) lines.push(`| authenticated cheap GET ≥ 70% of the bare route | ${Math.round((100 * typeList.rps) / bare.rps)}% | ${target(typeList.rps >= 0.7 * bare.rps)} |`);
  if (put) lines.push(`| datafile/put on Postgres ≥ 50% of the raw INSERT route | ${Math.round((100 * put.rps) / insert.rps)}% | ${target(put.rps >= 0.5 * insert.rps)} |`);
  for (const flavour of ['Postgres', 'PGlite']) {
    const list = find(flavour, 'GET destination/list', '10,000');
    const summary = find(flavour, 'GET monitoring/summary', '1,000,000');
    const meta = find(flavour, 'PUT destination', '100');
    if (list) lines.push(`| ${flavour}: destination/list, 10,000 destinations, p50 < 30 ms | ${list.p50} ms | ${target(list.p50 < 30)} |`);
    if (summary) lines.push(`| ${flavour}: monitoring/summary, 1,000,000 notifications, p50 < 100 ms | ${summary.p50} ms | ${target(summary.p50 < 100)} |`);
    if (meta) lines.push(`| ${flavour}: metadata PUT of 100 fields, p50 < 20 ms | ${meta.p50} ms | ${target(meta.p50 < 20)} |`);
  }
  lines.push('', 'The targets are stated for Postgres; PGlite (one query at a time, in process) is reported for comparison.', '');
  return lines.join('\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
