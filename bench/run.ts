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
import { openPostgres } from '../db/client.ts';
import { openPglite } from '../db/pglite.ts';
import { loadTls } from '../functions/node/tls.ts';
import { retrievalBench } from './retrieval.ts';
import { metadataBody, notificationsOf, type Scale } from './seed.ts';
import { storeS3Bench } from './store-s3.ts';
import {
  auth,
  cpuOf,
  log,
  machine,
  memoryOf,
  postgresCpu,
  prepare,
  start,
  startService,
  stop,
  waitFor,
  writeBenchFile,
} from './support.ts';

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** BENCH_ONLY=<text>: run only the scenarios whose name contains it (and skip writing BENCHMARKS.md). */
const ONLY = process.env.BENCH_ONLY;
/** BENCH_DATABASES=Postgres or PGlite: run only on that database. */
const DATABASES = (process.env.BENCH_DATABASES ?? 'Postgres,PGlite').split(',');
/**
 * BENCH_SIZES=large, small, put, store-s3 or retrieval: run only at that data size (put: the put at 1
 * and at 10,000 destinations, neither analyzed; store-s3: the S3 store's write of 1 GiB against
 * rclone's; retrieval: retrieval into the store against cp and the sums, scp and ECPDS_RETRIEVAL=none).
 */
const SIZES = (process.env.BENCH_SIZES ?? 'large,small,put,store-s3,retrieval').split(',');
const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-'));
const LARGE: Scale = { destinations: 10_000, cycles: 250, metadataFields: 100 };
const SMALL: Scale = { destinations: 1_000, cycles: 25, metadataFields: 10 };

/** CPU per request in µs: the server process, every Postgres process, and this process (the load generator). */
interface Cpu {
  server: number;
  postgres: number;
  load: number;
}
interface Row {
  flavour: string;
  scenario: string;
  data: string;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  rssMiB: number;
  cpu: Cpu;
}
const rows: Row[] = [];
let port = 19500;
/** BENCH_WARMUP_SECONDS: unrecorded load before each row, so compiled code and caches are warm. */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
/** BENCH_ROUNDS: how often each throughput scenario and its baseline are measured, alternately. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

interface Target {
  flavour: string;
  scenario: string;
  data: string;
  base: string;
  pid: number;
}
interface Load {
  path: string;
  method?: string;
  body?: string;
  connections: number;
  vary?: (n: number) => string;
}
let varied = 0;

async function measure(t: Target, opts: Load, seconds: number): Promise<Row> {
  const before = { server: cpuOf(t.pid), postgres: postgresCpu(), load: process.cpuUsage() };
  const result = await autocannon({
    url: t.base,
    connections: opts.connections,
    duration: seconds,
    headers: { authorization: auth, ...(opts.body && { 'content-type': 'application/json' }) },
    requests: [
      {
        method: (opts.method ?? 'GET') as 'GET',
        path: opts.path,
        body: opts.body,
        ...(opts.vary && { setupRequest: (req: object) => ({ ...req, path: opts.vary!(++varied) }) }),
      } as autocannon.Request,
    ],
  });
  const load = process.cpuUsage(before.load);
  const perRequest = (us: number) => Math.round(us / Math.max(1, result.requests.total));
  return {
    flavour: t.flavour,
    scenario: t.scenario,
    data: t.data,
    connections: opts.connections,
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    rssMiB: Math.round(memoryOf(t.pid)),
    cpu: {
      server: perRequest(cpuOf(t.pid) - before.server),
      postgres: perRequest(postgresCpu() - before.postgres),
      load: perRequest(load.user + load.system),
    },
  };
}

function record(row: Row) {
  rows.push(row);
  log(
    `${row.flavour} ${row.scenario} ${row.data}: ${row.rps} req/s p50 ${row.p50} ms p99 ${row.p99} ms ` +
      `errors ${row.errors}, CPU µs/request server ${row.cpu.server} Postgres ${row.cpu.postgres} load ${row.cpu.load}`,
  );
}

const wanted = (scenario: string) => !ONLY || scenario.includes(ONLY);

async function load(t: Target, opts: Load) {
  if (!wanted(t.scenario)) return;
  if (WARMUP_SECONDS > 0) await measure(t, opts, WARMUP_SECONDS);
  record(await measure(t, opts, SECONDS));
}

/**
 * A throughput scenario with its baselines, measured in turns (after a warm-up of each), so
 * that the drift of a shared machine falls on all alike; each keeps its median run.
 */
async function inTurns(...loads: Array<[Target, Load]>) {
  if (!loads.some(([t]) => wanted(t.scenario))) return;
  const runs: Row[][] = loads.map(() => []);
  if (WARMUP_SECONDS > 0) for (const [t, l] of loads) await measure(t, l, WARMUP_SECONDS);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [t, l]] of loads.entries()) runs[i]!.push(await measure(t, l, SECONDS));
  }
  const median = (list: Row[]) => [...list].sort((x, y) => x.rps - y.rps)[Math.floor(list.length / 2)]!;
  for (const list of runs) record(median(list));
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

function startApp(env: Record<string, string>) {
  const p = port++;
  return { child: startService(tmp, p, env), base: `https://127.0.0.1:${p}` };
}

function startBaseline(databaseUrl: string) {
  const p = port++;
  const child = start(
    [
      '--import',
      'tsx',
      'bench/baseline-server.ts',
      String(p),
      path.join(tmp, 'tls/cert.pem'),
      path.join(tmp, 'tls/key.pem'),
      databaseUrl,
    ],
    {},
  );
  return { child, base: `https://127.0.0.1:${p}` };
}

const TYPE_LIST: Load = { path: '/v1/destination/type/list', connections: 50 };
const BARE: Load = { path: '/bare', connections: 50 };
// A new value per request, like datafile/put's unique names: the load generator then does the same work for both.
const INSERT: Load = { path: '/', connections: 10, vary: (n) => `/insert?n=row-${n}-${Date.now()}` };
const putQuery = (label: string, n: number) =>
  `destination=BENCH_META&source=${encodeURIComponent(path.join(tmp, 'src/file.bin'))}` +
  `&uniquename=${label}-${n}-${Date.now()}`;
const putLoad = (label: string): Load => ({
  path: '/',
  connections: 10,
  vary: (n) => `/v1/datafile/put?${putQuery(label, n)}`,
});
const floorPutLoad = (label: string): Load => ({
  path: '/',
  connections: 10,
  vary: (n) => `/floor/put?${putQuery(`floor-${label}`, n)}`,
});
// The least each of the two requests must do, written by hand without the service's layers (baseline-server.ts).
const FLOOR_TYPE_LIST = 'floor: type list by hand (Basic check, log line)';
const FLOOR_PUT = 'floor: datafile/put by hand (Basic check, lstat, the same statement, log line)';

/** The service's throughput scenarios in turns with the baselines, then its latency scenarios. */
async function appScenarios(
  flavour: string,
  label: string,
  scale: Scale,
  env: Record<string, string>,
  baseline: { base: string; pid: number } | null,
) {
  const { child, base } = startApp(env);
  await waitFor(`${base}/v1/version`);
  const app = (scenario: string, data = '-') => ({ flavour, scenario, data, base, pid: child.pid! });
  const dests = `${scale.destinations.toLocaleString('en')} destinations`;
  if (baseline) {
    const bare = (scenario: string) => ({ flavour: 'baseline', scenario, data: '-', ...baseline });
    await inTurns(
      [bare('bare Hono JSON route'), BARE],
      [bare(FLOOR_TYPE_LIST), { ...TYPE_LIST, path: '/floor/type-list' }],
      [app('GET destination/type/list (authenticated)'), TYPE_LIST],
    );
    await inTurns(
      [bare('raw postgres.js INSERT'), INSERT],
      [bare(FLOOR_PUT), floorPutLoad(label)],
      [app('GET datafile/put'), putLoad(label)],
    );
    await load(bare('raw postgres.js SELECT'), { path: '/select', connections: 10 });
    await load(
      { ...bare('static body of destination/list size'), data: '10,000 destinations' },
      { path: '/static-list', connections: 1 },
    );
  } else if (label === 'large') {
    await load(app('GET destination/type/list (authenticated)'), TYPE_LIST);
    await load(app('GET datafile/put'), putLoad(label));
  }
  // Latency targets are read at one connection: the time one request takes, without queueing.
  // Large data is also loaded at four connections to show how the cost behaves under contention.
  for (const connections of label === 'large' ? [1, 4] : [1]) {
    await load(app('GET destination/list', dests), { path: '/v1/destination/list', connections });
    // The same list while another connection keeps changing a destination: rendered every time.
    if (env.DATABASE_URL)
      await churning(env.DATABASE_URL, () =>
        load(app('GET destination/list, changed before each request', dests), {
          path: '/v1/destination/list',
          connections,
        }),
      );
    await load(app('GET monitoring/summary', `${notificationsOf(scale).toLocaleString('en')} notifications`), {
      path: '/v1/monitoring/summary',
      connections,
    });
    await load(app('PUT destination/{name}/metadata', `${scale.metadataFields} fields`), {
      path: '/v1/destination/BENCH_META/metadata',
      method: 'PUT',
      body: metadataBody(scale.metadataFields),
      connections,
    });
  }
  await stop(child);
}

const PUT_UNANALYZED = 'never analyzed: GET datafile/put';
const PUT_SCALES = [
  ['1 destination', 0],
  ['10,001 destinations', 10_000],
] as const;

/**
 * The put's cost must not grow with the installation, even where nothing was analyzed (a table no
 * one writes, such as the aliases of an installation without any, never is; the embedded database
 * has no autovacuum): the put at 1 destination and at 10,001, seeded without ANALYZE or VACUUM and
 * measured in turns, on each database.
 */
async function putUnanalyzed(admin: postgres.Sql, databases: string[]) {
  if (!wanted(PUT_UNANALYZED)) return;
  const scaleOf = (destinations: number): Scale => ({ destinations, cycles: 0, metadataFields: 1 });
  const servers: Array<{ child: ReturnType<typeof startApp>['child']; target: Target }> = [];
  try {
    for (const flavour of DATABASES) {
      for (const [data, destinations] of PUT_SCALES) {
        log(`seeding ${flavour} for the put at ${data}, never analyzed`);
        let env: Record<string, string>;
        if (flavour === 'Postgres') {
          const name = `ecpds_bench_put_${destinations}_${process.pid}`;
          await admin.unsafe(`create database "${name}"`);
          databases.push(name);
          const url = new URL(PG);
          url.pathname = `/${name}`;
          await prepare(openPostgres(url.toString(), { max: 2 }), scaleOf(destinations), { statistics: false });
          env = { DATABASE_URL: url.toString() };
        } else {
          const dir = path.join(tmp, `pglite-put-${destinations}`);
          fs.mkdirSync(dir, { recursive: true });
          await prepare(await openPglite(path.join(dir, 'pgdata')), scaleOf(destinations), { statistics: false });
          env = { ECPDS_DATA_DIR: dir };
        }
        const { child, base } = startApp(env);
        await waitFor(`${base}/v1/version`);
        servers.push({ child, target: { flavour, scenario: PUT_UNANALYZED, data, base, pid: child.pid! } });
      }
    }
    for (const flavour of DATABASES) {
      const [one, many] = servers.filter((s) => s.target.flavour === flavour).map((s) => s.target);
      await inTurns([one!, putLoad('unanalyzed-1')], [many!, putLoad('unanalyzed-10k')]);
      const [a, b] = [one, many].map((t) => rows.findLast((r) => r.flavour === flavour && r.data === t!.data)!);
      const share = Math.round((100 * b!.rps) / a!.rps);
      log(`${flavour}: the put at ${b!.data} runs at ${share}% of its rate at ${a!.data}, neither analyzed`);
    }
  } finally {
    for (const { child } of servers) await stop(child);
  }
}

async function main() {
  fs.mkdirSync(path.join(tmp, 'src'), { recursive: true });
  fs.writeFileSync(path.join(tmp, 'src/file.bin'), Buffer.alloc(1 << 20));
  await loadTls({ dataDir: tmp, tlsCertFile: null, tlsKeyFile: null } as never);
  const admin = postgres(PG.toString(), { max: 1, onnotice: () => undefined });
  const databases: string[] = [];
  try {
    for (const [label, scale] of (
      [
        ['large', LARGE],
        ['small', SMALL],
      ] as const
    ).filter(([l]) => SIZES.includes(l))) {
      const name = `ecpds_bench_${label}_${process.pid}`;
      await admin.unsafe(`create database "${name}"`);
      databases.push(name);
      const url = new URL(PG);
      url.pathname = `/${name}`;
      log(`seeding Postgres ${label}`);
      await prepare(openPostgres(url.toString(), { max: 2 }), scale);
      if (DATABASES.includes('Postgres')) {
        // The baselines run next to the service on the large data, so that they can be measured in turns.
        const baseline = label === 'large' ? startBaseline(url.toString()) : null;
        if (baseline) await waitFor(`${baseline.base}/bare`);
        try {
          await appScenarios(
            'Postgres',
            label,
            scale,
            { DATABASE_URL: url.toString() },
            baseline && { base: baseline.base, pid: baseline.child.pid! },
          );
        } finally {
          if (baseline) await stop(baseline.child);
        }
      }
      if (!DATABASES.includes('PGlite')) continue;

      log(`seeding PGlite ${label}`);
      const dir = path.join(tmp, `pglite-${label}`);
      fs.mkdirSync(dir, { recursive: true });
      await prepare(await openPglite(path.join(dir, 'pgdata')), scale);
      await appScenarios('PGlite', label, scale, { ECPDS_DATA_DIR: dir }, null);
    }
    if (SIZES.includes('put')) await putUnanalyzed(admin, databases);
    if (SIZES.includes('store-s3')) await storeS3Bench();
    if (SIZES.includes('retrieval')) await retrievalBench();
  } finally {
    for (const name of databases)
      await admin.unsafe(`drop database if exists "${name}" with (force)`).catch(() => undefined);
    await admin.end();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  if (ONLY || DATABASES.length < 2 || SIZES.length < 2) return log('a partial run: BENCHMARKS.md left as it was');
  writeBenchFile(report());
}

function report(): string {
  const find = (flavour: string, scenario: string, data?: string, connections?: number) =>
    rows.find(
      (r) =>
        r.flavour === flavour &&
        r.scenario.startsWith(scenario) &&
        (data === undefined || r.data.startsWith(data)) &&
        (connections === undefined || r.connections === connections),
    );
  const bare = find('baseline', 'bare')!;
  const insert = find('baseline', 'raw postgres.js INSERT')!;
  const target = (ok: boolean) => (ok ? 'met' : '**missed**');
  const lines = [
    '# Benchmarks',
    '',
    `Measured by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}: ${machine()}.`,
    `Load from autocannon in a separate process over HTTPS on loopback, ${SECONDS} s per row ` +
      `after ${WARMUP_SECONDS} s of unrecorded warm-up; server and load generator share the machine's cores. ` +
      "RSS is the server's peak resident memory.",
    `The two throughput scenarios ran ${ROUNDS} times in turns with their baselines (both servers up at once); ` +
      'each row is the run with the median req/s.',
    '',
    'CPU µs/req: CPU time per request of the server process, of all Postgres processes ' +
      '(PGlite runs inside the server) and of the load generator.',
    '',
    '| Database | Scenario | Data | Connections | req/s | p50 ms | p99 ms | Errors | RSS MiB ' +
      '| CPU µs/req: server | Postgres | load |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.flavour} | ${r.scenario} | ${r.data} | ${r.connections} | ${r.rps} | ${r.p50} | ${r.p99} ` +
        `| ${r.errors} | ${r.rssMiB} | ${r.cpu.server} ` +
        `| ${r.flavour === 'PGlite' ? '-' : r.cpu.postgres} | ${r.cpu.load} |`,
    ),
    '',
    '## Targets',
    '',
    '| Target | Measured | |',
    '|---|---|---|',
  ];
  for (const flavour of ['Postgres', 'PGlite']) {
    const list = find(flavour, 'GET destination/list', '10,000', 1);
    const summary = find(flavour, 'GET monitoring/summary', '1,000,000', 1);
    const meta = find(flavour, 'PUT destination', '100', 1);
    if (list)
      lines.push(
        `| ${flavour}: destination/list, 10,000 destinations, p50 < 30 ms (1 connection) ` +
          `| ${list.p50} ms | ${target(list.p50 < 30)} |`,
      );
    const changed = find(flavour, 'GET destination/list, changed', '10,000', 1);
    if (changed)
      lines.push(
        `| ${flavour}: the same, the list changed before each request ` +
          `| ${changed.p50} ms | ${target(changed.p50 < 30)} |`,
      );
    if (summary)
      lines.push(
        `| ${flavour}: monitoring/summary, 1,000,000 notifications, p50 < 100 ms (1 connection) ` +
          `| ${summary.p50} ms | ${target(summary.p50 < 100)} |`,
      );
    if (meta)
      lines.push(
        `| ${flavour}: metadata PUT of 100 fields, p50 < 20 ms (1 connection) ` +
          `| ${meta.p50} ms | ${target(meta.p50 < 20)} |`,
      );
  }
  lines.push(
    '',
    'The targets are stated for Postgres; PGlite (one query at a time, in process) is reported for comparison. ' +
      'The throughput ratios against the bare route and the raw INSERT are retired: the floors below show them ' +
      'out of reach for any implementation that checks credentials and logs each request.',
    '',
  );
  const typeList = find('Postgres', 'GET destination/type/list');
  const put = find('Postgres', 'GET datafile/put');
  const floorTypeList = find('baseline', FLOOR_TYPE_LIST);
  const floorPut = find('baseline', FLOOR_PUT);
  if (floorTypeList && floorPut && typeList && put) {
    const share = (a: Row, b: Row) => `${Math.round((100 * a.rps) / b.rps)}%`;
    const cpu = (r: Row) => r.cpu.server + r.cpu.postgres + r.cpu.load;
    lines.push(
      '## Floors',
      '',
      "What each request must do at the least, written by hand in the baseline server without the service's layers, " +
        'measured in the same turns: the Basic credentials checked against the stored hash ' +
        '(SHA-256, compared in constant time) and the permission, one access log line, ' +
        "and for the put the lstat of the source and the service's registering statement.",
      '',
      '| Request | Baseline req/s | Floor req/s (share of baseline) | Service req/s (share of baseline, of floor) ' +
        '| CPU µs/req: baseline, floor, service (server + Postgres + load) |',
      '|---|---|---|---|---|',
      `| authenticated type list | ${bare.rps} | ${floorTypeList.rps} (${share(floorTypeList, bare)}) ` +
        `| ${typeList.rps} (${share(typeList, bare)}, ${share(typeList, floorTypeList)}) ` +
        `| ${cpu(bare)}, ${cpu(floorTypeList)}, ${cpu(typeList)} |`,
      `| datafile/put | ${insert.rps} | ${floorPut.rps} (${share(floorPut, insert)}) ` +
        `| ${put.rps} (${share(put, insert)}, ${share(put, floorPut)}) ` +
        `| ${cpu(insert)}, ${cpu(floorPut)}, ${cpu(put)} |`,
      '',
    );
  }
  return lines.join('\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
