/**
 * `npm run bench`: the service under load next to baselines measured in the same run, on
 * Postgres and on the embedded PGlite, at two data sizes; results go to BENCHMARKS.md.
 * Loopback only, every load bounded in time (BENCH_SECONDS, default 10).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { openPostgres } from '../../db/client.ts';
import { openPglite } from '../../db/pglite.ts';
import { loadTls } from '../../functions/node/tls.ts';
import { metadataBody, notificationsOf, type Scale } from './seed.ts';
import { auth, log, machine, memoryOf, prepare, start, startService, stop, waitFor, writeBenchFile } from './support.ts';

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** BENCH_ONLY=<text>: run only the scenarios whose name contains it (and skip writing BENCHMARKS.md). */
const ONLY = process.env.BENCH_ONLY;
/** BENCH_DATABASES=Postgres or PGlite: run only on that database. */
const DATABASES = (process.env.BENCH_DATABASES ?? 'Postgres,PGlite').split(',');
/** BENCH_SIZES=large or small: run only at that data size. */
const SIZES = (process.env.BENCH_SIZES ?? 'large,small').split(',');
const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-'));
const LARGE: Scale = { destinations: 10_000, cycles: 250, metadataFields: 100 };
const SMALL: Scale = { destinations: 1_000, cycles: 25, metadataFields: 10 };

interface Row { flavour: string; scenario: string; data: string; connections: number; rps: number; p50: number; p99: number; errors: number; rssMiB: number }
const rows: Row[] = [];
let port = 19500;

async function load(flavour: string, scenario: string, data: string, base: string, pid: number, opts: { path: string; method?: string; body?: string; connections: number; vary?: (n: number) => string }) {
  if (ONLY && !scenario.includes(ONLY)) return;
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
    p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.timeouts + result.non2xx, rssMiB: Math.round(memoryOf(pid)),
  };
  rows.push(row);
  log(`${flavour} ${scenario} ${data}: ${row.rps} req/s p50 ${row.p50} ms p99 ${row.p99} ms errors ${row.errors}`);
}

/** Runs `work` while a separate connection updates one destination over and over. */
async function churning(url: string, work: () => Promise<void>) {
  const writer = postgres(url, { max: 1, onnotice: () => undefined });
  let running = true;
  const loop = (async () => {
    while (running) await writer`update destinations set comment = comment where name = 'BENCH_000001'`;
  })();
  try {
    await work();
  } finally {
    running = false;
    await loop;
    await writer.end();
  }
}

async function appScenarios(flavour: string, label: string, scale: Scale, env: Record<string, string>, withThroughput: boolean) {
  const p = port++;
  const child = startService(tmp, p, env);
  const base = `https://127.0.0.1:${p}`;
  await waitFor(`${base}/v1/version`);
  const pid = child.pid!;
  const dests = `${scale.destinations.toLocaleString('en')} destinations`;
  if (withThroughput) {
    await load(flavour, 'GET destination/type/list (authenticated)', '-', base, pid, { path: '/v1/destination/type/list', connections: 50 });
    await load(flavour, 'GET datafile/put', '-', base, pid, { path: '/', connections: 10, vary: (n) => `/v1/datafile/put?destination=BENCH_META&source=${encodeURIComponent(path.join(tmp, 'src/file.bin'))}&uniquename=${label}-${n}-${Date.now()}` });
  }
  // Latency targets are read at one connection: the time one request takes, without queueing.
  // Large data is also loaded at four connections to show how the cost behaves under contention.
  for (const connections of withThroughput ? [1, 4] : [1]) {
    await load(flavour, 'GET destination/list', dests, base, pid, { path: '/v1/destination/list', connections });
    // The same list while another connection keeps changing a destination: rendered every time.
    if (env.DATABASE_URL) await churning(env.DATABASE_URL, () => load(flavour, 'GET destination/list, changed before each request', dests, base, pid, { path: '/v1/destination/list', connections }));
    await load(flavour, 'GET monitoring/summary', `${notificationsOf(scale).toLocaleString('en')} notifications`, base, pid, { path: '/v1/monitoring/summary', connections });
    await load(flavour, 'PUT destination/{name}/metadata', `${scale.metadataFields} fields`, base, pid, { path: '/v1/destination/BENCH_META/metadata', method: 'PUT', body: metadataBody(scale.metadataFields), connections });
  }
  await stop(child);
}

async function main() {
  fs.mkdirSync(path.join(tmp, 'src'), { recursive: true });
  fs.writeFileSync(path.join(tmp, 'src/file.bin'), Buffer.alloc(1 << 20));
  await loadTls({ dataDir: tmp, tlsCertFile: null, tlsKeyFile: null } as never);
  const admin = postgres(PG.toString(), { max: 1, onnotice: () => undefined });
  const databases: string[] = [];
  try {
    for (const [label, scale] of ([['large', LARGE], ['small', SMALL]] as const).filter(([l]) => SIZES.includes(l))) {
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
        await load('baseline', 'static body of destination/list size', '10,000 destinations', base, baseline.pid!, { path: '/static-list', connections: 1 });
        await stop(baseline);
      }
      if (DATABASES.includes('Postgres')) await appScenarios('Postgres', label, scale, { DATABASE_URL: url.toString() }, label === 'large');
      if (!DATABASES.includes('PGlite')) continue;

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
  if (ONLY || DATABASES.length < 2 || SIZES.length < 2) return log('a partial run: BENCHMARKS.md left as it was');
  writeBenchFile(report());
  log('written BENCHMARKS.md');
}

function report(): string {
  const find = (flavour: string, scenario: string, data?: string, connections?: number) =>
    rows.find((r) => r.flavour === flavour && r.scenario.startsWith(scenario) && (data === undefined || r.data.startsWith(data)) && (connections === undefined || r.connections === connections));
  const bare = find('baseline', 'bare')!;
  const insert = find('baseline', 'raw postgres.js INSERT')!;
  const target = (ok: boolean) => (ok ? 'met' : '**missed**');
  const lines = [
    '# Benchmarks',
    '',
    `Measured by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}: ${machine()}.`,
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
    const list = find(flavour, 'GET destination/list', '10,000', 1);
    const summary = find(flavour, 'GET monitoring/summary', '1,000,000', 1);
    const meta = find(flavour, 'PUT destination', '100', 1);
    if (list) lines.push(`| ${flavour}: destination/list, 10,000 destinations, p50 < 30 ms (1 connection) | ${list.p50} ms | ${target(list.p50 < 30)} |`);
    const changed = find(flavour, 'GET destination/list, changed', '10,000', 1);
    if (changed) lines.push(`| ${flavour}: the same, the list changed before each request | ${changed.p50} ms | ${target(changed.p50 < 30)} |`);
    if (summary) lines.push(`| ${flavour}: monitoring/summary, 1,000,000 notifications, p50 < 100 ms (1 connection) | ${summary.p50} ms | ${target(summary.p50 < 100)} |`);
    if (meta) lines.push(`| ${flavour}: metadata PUT of 100 fields, p50 < 20 ms (1 connection) | ${meta.p50} ms | ${target(meta.p50 < 20)} |`);
  }
  lines.push('', 'The targets are stated for Postgres; PGlite (one query at a time, in process) is reported for comparison.', '');
  return lines.join('\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
