/**
 * The data portal's download starts, several builds side by side (BENCHMARKS.md, "Data portal:
 * findings"): `node --import tsx bench/portal-builds.ts <checkout> [<checkout> ...]` starts the
 * compiled build (`npm run build` in each) of each checkout on a database of its own, all serving
 * the same 100 files, then sends each in turn bursts of 100 GETs at once: the time to first byte,
 * and the CPU per download of the server and of its Postgres backends apart. Running the builds
 * at once and in turns, burst by burst, lets them share the same moments of a busy machine.
 *
 * BENCH_ROUNDS (default 10) bursts each, after two unrecorded; BENCH_PORTAL_FILE=tiny (1 KiB,
 * default) or small (10 MiB); BENCH_PORTAL_NEW=1 sends each GET on a new connection, else each
 * burst first sends a HEAD of each file on the connections it then reuses; BENCH_PORTAL_GAP_MS
 * waits that long between the HEADs and the GETs (longer than a remembered login, to measure a
 * burst whose logins are checked).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const GAP_MS = Number(process.env.BENCH_PORTAL_GAP_MS ?? 0);
const KIND = process.env.BENCH_PORTAL_FILE === 'small' ? 'small' : 'tiny';
const SIZE = KIND === 'small' ? 10 * 1024 * 1024 : 1024;
const NEW = process.env.BENCH_PORTAL_NEW === '1';
const AT_ONCE = 100;
const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const FIRST_PORT = 19800;

type Scene = typeof import('./portal-scene.ts');
type Support = typeof import('./support.ts');
type Client = typeof import('./https-client.ts');

/** One checkout's own bench modules: its service starts from its own dist/ with its own key. */
interface Build {
  checkout: string;
  scene: Scene;
  support: Support;
  client: Client;
}

interface Burst {
  p50: number;
  p99: number;
  serverMs: number;
  postgresMs: number;
}

interface Served {
  build: Build;
  child: ChildProcess;
  base: string;
  database: string;
  bursts: Burst[];
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.max(0, Math.ceil((p / 100) * values.length) - 1)] ?? 0;

async function load(checkout: string): Promise<Build> {
  const root = path.resolve(checkout);
  return {
    checkout,
    scene: await import(path.join(root, 'bench/portal-scene.ts')),
    support: await import(path.join(root, 'bench/support.ts')),
    client: await import(path.join(root, 'bench/https-client.ts')),
  };
}

async function burst(s: Served, targets: string[]): Promise<Burst> {
  const { agentOf, timedRequest } = s.build.client;
  const { cpuOf, postgresCpu } = s.build.support;
  const headers = { authorization: s.build.scene.userAuth };
  const agent = agentOf(!NEW);
  const url = (target: string) => `${s.base}/portal/data/${s.build.scene.FILES}/${target}`;
  try {
    if (!NEW) await Promise.all(targets.map((t) => timedRequest(agent, url(t), { method: 'HEAD', headers })));
    if (GAP_MS > 0) await new Promise((resolve) => setTimeout(resolve, GAP_MS));
    const server = cpuOf(s.child.pid!);
    const database = postgresCpu(s.database);
    const got = await Promise.all(targets.map((t) => timedRequest(agent, url(t), { headers })));
    const serverMs = (cpuOf(s.child.pid!) - server) / 1000 / AT_ONCE;
    const postgresMs = (postgresCpu(s.database) - database) / 1000 / AT_ONCE;
    for (const g of got) {
      if (g.status !== 200 || g.bytes !== SIZE)
        throw new Error(`a download answered ${g.status} with ${g.bytes} bytes`);
    }
    const times = got.map((g) => g.firstByte);
    return { p50: percentile(times, 50), p99: percentile(times, 99), serverMs, postgresMs };
  } finally {
    agent.destroy();
  }
}

async function main() {
  const checkouts = process.argv.slice(2);
  if (checkouts.length === 0) throw new Error('usage: bench/portal-builds.ts <checkout> [<checkout> ...]');
  const builds = await Promise.all(checkouts.map(load));
  const first = builds[0]!;
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-builds-')));
  fs.chmodSync(tmp, 0o755);
  const { loadTls } = await import('../functions/node/tls.ts');
  await loadTls({ dataDir: tmp, tlsCertFile: null, tlsKeyFile: null } as never);
  const targets = Array.from({ length: AT_ONCE }, (_, i) => first.scene.manyName(KIND, i));
  for (const target of targets) first.scene.writeFile(path.join(tmp, 'src', first.scene.FILES, target), SIZE);

  const admin = postgres(PG.href, { max: 1, onnotice: () => undefined });
  const served: Served[] = [];
  try {
    for (const [i, build] of builds.entries()) {
      const database = `ecpds_bench_builds_${process.pid}_${i}`;
      await admin.unsafe(`create database "${database}"`);
      const url = new URL(PG);
      url.pathname = `/${database}`;
      await build.scene.prepareDatabase(url.href);
      const port = FIRST_PORT + i;
      const child = build.support.startService(tmp, port, {
        DATABASE_URL: url.href,
        ECPDS_DATA_DIR: path.join(tmp, `data-${i}`),
        // A build with a store serves the files its retriever stored; no destination is started.
        ECPDS_MOVER: '1',
        // The bench's downloads at once all come from one address, as many clients' would from many.
        ECPDS_MAX_STARTUPS_PER_ADDRESS: String(AT_ONCE),
      });
      const base = `https://127.0.0.1:${port}`;
      served.push({ build, child, base, database, bursts: [] });
      await build.support.waitFor(`${base}/v1/version`);
      const sql = postgres(url.href, { max: 1, onnotice: () => undefined });
      await build.scene.setUpScene(sql, base, path.join(tmp, 'src'), targets);
      await sql.end();
    }
    for (const s of served) for (let i = 0; i < 2; i++) await burst(s, targets);
    for (let round = 0; round < ROUNDS; round++) for (const s of served) s.bursts.push(await burst(s, targets));
    for (const s of served) {
      const median = (pick: (b: Burst) => number, digits: number) => percentile(s.bursts.map(pick), 50).toFixed(digits);
      const firstByte = `first byte p50 ${median((b) => b.p50, 0)} p99 ${median((b) => b.p99, 0)} ms`;
      const cpu = `server ${median((b) => b.serverMs, 2)}, Postgres ${median((b) => b.postgresMs, 2)} ms`;
      const files = `${AT_ONCE} ${KIND === 'small' ? '10 MiB' : '1 KiB'} files`;
      console.log(
        `${s.build.checkout}: ${firstByte}, CPU per download: ${cpu} (medians of ${ROUNDS} bursts of ${files})`,
      );
    }
  } finally {
    for (const s of served) await s.build.support.stop(s.child);
    for (const s of served) await admin.unsafe(`drop database if exists "${s.database}" with (force)`).catch(() => {});
    await admin.end();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
