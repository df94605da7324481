/**
 * The data portal's figures (BENCHMARKS.md, "Data portal"): `ecpds-edge serve` (the compiled build)
 * on Postgres against Debian's nginx serving the same files over TLS with the same certificate,
 * both started here, the same clients and cipher for both:
 *
 * - one 1 GiB download with curl (speed, the servers' CPU and peak RSS);
 * - 100 downloads of 10 MiB files at once (100 files) with Node's https client: time to first
 *   byte on connections already open, and on new ones (the TLS handshake included); the same with
 *   files of 1 KiB, whose bodies cost next to nothing: the requests' own cost;
 * - listings of destinations of 100,000 files (JSON pages), one request at a time.
 *
 * Each row is the median of BENCH_RUNS (default 3) runs, the service's and the baseline's in turns.
 * BENCH_ONLY=download|first byte|listing runs one part (and leaves BENCHMARKS.md as it was);
 * BENCH_PORTAL_BIG_MIB changes the big file; BENCH_SERVER_NODE_OPTIONS profiles the service.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { openPostgres } from '../db/client.ts';
import { portalRepo } from '../db/repositories/portal.ts';
import { loadTls } from '../functions/node/tls.ts';
import { agentOf, CIPHER, curlCipher, curlSpeed, type Fetched, timedRequest } from './https-client.ts';
import { NGINX, startNginx } from './nginx.ts';
import {
  BIG,
  FILES,
  FLAT,
  insertListedFiles,
  LISTED,
  manyName,
  prepareDatabase,
  setUpScene,
  TREE,
  userAuth,
  writeFile,
} from './portal-scene.ts';
import {
  cpuOf,
  log,
  machine,
  median,
  memoryOf,
  postgresCpu,
  startService,
  stop,
  waitFor,
  writeBenchFile,
} from './support.ts';

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const BIG_BYTES = Number(process.env.BENCH_PORTAL_BIG_MIB ?? 1024) * 1024 * 1024;
const AT_ONCE = 100;
const SIZES = { small: 10 * 1024 * 1024, tiny: 1024 } as const;
const LIST_SAMPLES = 50;
const LIST_WARMUP = 5;
const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const PORTAL_PORT = 19700;
const NGINX_PORT = 19701;

const PARTS = ['download', 'first byte', 'listing'] as const;
type Part = (typeof PARTS)[number];
const ONLY = process.env.BENCH_ONLY?.toLowerCase();
const wanted = (part: Part) => !ONLY || 'data portal'.includes(ONLY) || part.includes(ONLY);
if (!PARTS.some(wanted)) process.exit(0);

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-portal-')));
// nginx's worker drops root for nobody: it must read the files and walk to them.
fs.chmodSync(tmp, 0o755);
const sources = path.join(tmp, 'src');
const tlsFiles = { cert: path.join(tmp, 'tls/cert.pem'), key: path.join(tmp, 'tls/key.pem') };
const admin = postgres(PG.href, { max: 1, onnotice: () => undefined });
const database = `ecpds_bench_portal_${process.pid}`;
const dbUrl = new URL(PG);
dbUrl.pathname = `/${database}`;

const fileUrl = (base: string, target: string, portal: boolean) =>
  portal ? `${base}/portal/data/${FILES}/${target}` : `${base}/${FILES}/${target}`;
const bigSize = () => `${(BIG_BYTES / 2 ** 30).toFixed(BIG_BYTES % 2 ** 30 ? 2 : 0)} GiB`;
const mb = (bytesPerSecond: number) => Math.round(bytesPerSecond / 1e6);
/** Nearest rank: the value below which `p` percent of the samples fall. */
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.max(0, Math.ceil((p / 100) * values.length) - 1)] ?? 0;
const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
const loadBefore = loadAverage();
const ms = (value: number) => (value < 10 ? value.toFixed(1) : value.toFixed(0));

interface Servers {
  portal: { base: string; pid: number };
  nginx: { base: string; worker: () => number };
}

/** CPU time (µs) of the serving processes: the service with its database's backends, or nginx's worker. */
const serverCpu = (s: Servers, portal: boolean) =>
  portal ? cpuOf(s.portal.pid) + postgresCpu(database) : cpuOf(s.nginx.worker());

/** Forgets a process's peak resident memory (VmHWM), so that the next reading is the peak since. */
function resetPeak(pid: number) {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

interface Download {
  speed: number;
  cpuSeconds: number;
  peakMiB: number;
}
const downloadRows: Array<{ server: string; runs: Download[]; cipher: string }> = [];
let peakSinceStart = false;

/** The big file with curl, the service and nginx in turns. */
async function bigDownload(s: Servers) {
  const portalUrl = fileUrl(s.portal.base, BIG, true);
  const nginxUrl = fileUrl(s.nginx.base, BIG, false);
  const ciphers = { portal: await curlCipher(portalUrl, userAuth), nginx: await curlCipher(nginxUrl) };
  const portal: Download[] = [];
  const nginx: Download[] = [];
  const once = async (pid: number, url: string, authorization?: string): Promise<Download> => {
    peakSinceStart ||= !resetPeak(pid);
    const cpu = cpuOf(pid);
    const speed = await curlSpeed(url, BIG_BYTES, authorization);
    return { speed, cpuSeconds: (cpuOf(pid) - cpu) / 1e6, peakMiB: memoryOf(pid) };
  };
  for (let run = 0; run < RUNS; run++) {
    portal.push(await once(s.portal.pid, portalUrl, userAuth));
    nginx.push(await once(s.nginx.worker(), nginxUrl));
    log(`download run ${run + 1}: portal ${mb(portal.at(-1)!.speed)} MB/s, nginx ${mb(nginx.at(-1)!.speed)} MB/s`);
  }
  downloadRows.push({ server: 'ecpds-edge serve, /portal/data/', runs: portal, cipher: ciphers.portal });
  downloadRows.push({ server: 'baseline: nginx 1.22, static file', runs: nginx, cipher: ciphers.nginx });
}

interface FirstBytes {
  p50: number;
  p99: number;
  seconds: number;
  /** CPU time of the serving processes per download, in ms. */
  cpuMs: number;
}
type ManyAtOnce = { dir: 'small' | 'tiny'; open: boolean };
const firstByteRows: Array<ManyAtOnce & { server: string; runs: FirstBytes[] }> = [];

/**
 * AT_ONCE files all at once, each read to its end: time to first byte over connections opened and
 * used once before (a HEAD of each file), or each on a new connection.
 */
async function manyAtOnce(s: Servers, portal: boolean, { dir, open }: ManyAtOnce): Promise<FirstBytes> {
  const url = (i: number) => fileUrl(portal ? s.portal.base : s.nginx.base, manyName(dir, i), portal);
  const headers: Record<string, string> = portal ? { authorization: userAuth } : {};
  const agent = agentOf(open);
  try {
    const indexes = Array.from({ length: AT_ONCE }, (_, i) => i);
    if (open) await Promise.all(indexes.map((i) => timedRequest(agent, url(i), { method: 'HEAD', headers })));
    const cpu = serverCpu(s, portal);
    const started = performance.now();
    const got = await Promise.all(indexes.map((i) => timedRequest(agent, url(i), { headers })));
    const seconds = (performance.now() - started) / 1000;
    const cpuMs = (serverCpu(s, portal) - cpu) / 1000 / AT_ONCE;
    checkAll(got, SIZES[dir], open);
    const times = got.map((g) => g.firstByte);
    return { p50: percentile(times, 50), p99: percentile(times, 99), seconds, cpuMs };
  } finally {
    agent.destroy();
  }
}

function checkAll(got: Fetched[], bytes: number, reused: boolean) {
  for (const g of got) {
    if (g.status !== 200 || g.bytes !== bytes) throw new Error(`a download answered ${g.status} with ${g.bytes} bytes`);
    if (g.reusedSocket !== reused) throw new Error(`a download ${reused ? 'did not reuse' : 'reused'} a connection`);
    if (g.cipher !== CIPHER) throw new Error(`a download negotiated ${g.cipher}`);
  }
}

/** The service and nginx in turns, for each kind of run: 10 MiB on open and new connections, 1 KiB on open ones. */
async function firstBytes(s: Servers) {
  const kinds: ManyAtOnce[] = [
    { dir: 'small', open: true },
    { dir: 'small', open: false },
    { dir: 'tiny', open: true },
  ];
  for (const kind of kinds) {
    const runs = { portal: [] as FirstBytes[], nginx: [] as FirstBytes[] };
    // One unrecorded round each: compiled code, caches and the files' pages warm.
    for (const portal of [true, false]) await manyAtOnce(s, portal, kind);
    for (let run = 0; run < RUNS; run++) {
      for (const portal of [true, false]) {
        const result = await manyAtOnce(s, portal, kind);
        (portal ? runs.portal : runs.nginx).push(result);
        log(
          `first byte, ${kind.dir}, ${kind.open ? 'open' : 'new'} connections, ${portal ? 'portal' : 'nginx'}: ` +
            `p50 ${ms(result.p50)} p99 ${ms(result.p99)} ms, ${result.cpuMs.toFixed(2)} ms CPU per download`,
        );
      }
    }
    firstByteRows.push({ ...kind, server: 'ecpds-edge serve', runs: runs.portal });
    firstByteRows.push({ ...kind, server: 'baseline: nginx', runs: runs.nginx });
  }
}

interface Timing {
  p50: number;
  p99: number;
}
const listingRows: Array<{ scenario: string; entries: number; service: Timing; repository: Timing }> = [];

/** One request at a time, over one connection kept open: p50 and p99 of request → last byte. */
async function sequential(work: () => Promise<number>): Promise<Timing> {
  for (let i = 0; i < LIST_WARMUP; i++) await work();
  const times: number[] = [];
  for (let i = 0; i < LIST_SAMPLES; i++) times.push(await work());
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

/** Listing pages through the service, next to the repository's same page read in this process. */
async function listings(s: Servers) {
  const agent = agentOf(true);
  const handle = openPostgres(dbUrl.href, { max: 1 });
  const repo = portalRepo(handle.db);
  const pages = [
    { scenario: `${FLAT}: first page, files only`, destination: FLAT, prefix: '', after: null },
    {
      scenario: `${FLAT}: a page near the end (after=f099000.bin)`,
      destination: FLAT,
      prefix: '',
      after: 'f099000.bin',
    },
    { scenario: `${TREE}: first page of the top, 901 directories`, destination: TREE, prefix: '', after: null },
    {
      scenario: `${TREE}: first page of many/ (10,000 files beside 900 directories)`,
      destination: TREE,
      prefix: 'many/',
      after: null,
    },
  ];
  try {
    for (const page of pages) {
      const query = page.after === null ? '' : `?after=${encodeURIComponent(page.after)}`;
      const url = `${s.portal.base}/portal/data/${page.destination}/${page.prefix}${query}`;
      const headers = { authorization: userAuth, accept: 'application/json' };
      const check = await timedRequest(agent, url, { headers, keepBody: true });
      if (check.status !== 200) throw new Error(`${url}: ${check.status} ${check.body}`);
      const entries = (JSON.parse(check.body!.toString()) as unknown[]).length;
      const service = await sequential(async () => {
        const r = await timedRequest(agent, url, { headers });
        if (r.status !== 200) throw new Error(`${url}: ${r.status}`);
        return r.total;
      });
      // What the route asks of the repository: one entry more than the page.
      const repository = await sequential(async () => {
        const started = performance.now();
        await repo.list(page.destination, page.prefix, new Date(), { after: page.after, limit: 1001 });
        return performance.now() - started;
      });
      listingRows.push({ scenario: page.scenario, entries, service, repository });
      log(
        `listing ${page.scenario}: ${entries} entries, p50 ${ms(service.p50)} ms, repository ${ms(repository.p50)} ms`,
      );
    }
    const head = await sequential(async () => {
      const r = await timedRequest(agent, fileUrl(s.portal.base, manyName('tiny', 0), true), {
        method: 'HEAD',
        headers: { authorization: userAuth },
      });
      return r.total;
    });
    listingRows.push({
      scenario: 'for comparison: HEAD of one file (the login and one lookup)',
      entries: 0,
      service: head,
      repository: { p50: Number.NaN, p99: Number.NaN },
    });
  } finally {
    agent.destroy();
    await handle.close();
  }
}

async function main() {
  if (!fs.existsSync(NGINX)) throw new Error(`${NGINX} is needed as the baseline (apt-get install nginx-light)`);
  await loadTls({ dataDir: tmp, tlsCertFile: null, tlsKeyFile: null } as never);
  log('portal: writing the files');
  const targets: Array<[string, number]> = [[BIG, BIG_BYTES]];
  for (const dir of ['small', 'tiny'] as const) {
    for (let i = 0; i < AT_ONCE; i++) targets.push([manyName(dir, i), SIZES[dir]]);
  }
  for (const [target, bytes] of targets) writeFile(path.join(sources, FILES, target), bytes);
  for (const dir of ['', FILES, `${FILES}/small`, `${FILES}/tiny`]) fs.chmodSync(path.join(sources, dir), 0o755);

  await admin.unsafe(`create database "${database}"`);
  await prepareDatabase(dbUrl.href);
  const service = startService(tmp, PORTAL_PORT, {
    DATABASE_URL: dbUrl.href,
    ECPDS_DATA_DIR: path.join(tmp, 'data'),
    // Its retriever stores the files put; its destinations are never started, so nothing is sent.
    ECPDS_MOVER: '1',
    // The bench's downloads at once all come from one address, as many clients' would from many.
    ECPDS_MAX_STARTUPS_PER_ADDRESS: String(AT_ONCE),
  });
  let nginx: Awaited<ReturnType<typeof startNginx>> | null = null;
  try {
    nginx = await startNginx({
      dir: path.join(tmp, 'nginx'),
      port: NGINX_PORT,
      root: sources,
      ...tlsFiles,
      cipher: CIPHER,
    });
    const base = `https://127.0.0.1:${PORTAL_PORT}`;
    await waitFor(`${base}/v1/version`);
    const sql = postgres(dbUrl.href, { max: 1, onnotice: () => undefined });
    log('portal: the user, its destinations and files');
    const registered = targets.map(([target]) => target);
    await setUpScene(sql, base, sources, registered);
    if (wanted('listing')) await insertListedFiles(sql);
    await sql.end();
    const servers: Servers = { portal: { base, pid: service.pid! }, nginx: { base: nginx.base, worker: nginx.worker } };
    if (wanted('download')) await bigDownload(servers);
    if (wanted('first byte')) await firstBytes(servers);
    if (wanted('listing')) await listings(servers);
  } finally {
    await stop(service);
    await nginx?.stop();
    await admin.unsafe(`drop database if exists "${database}" with (force)`).catch(() => undefined);
    await admin.end();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const text = report();
  if (ONLY) {
    console.log(text);
    return log('a partial run: BENCHMARKS.md left as it was');
  }
  writeBenchFile(text);
}

function report(): string {
  const lines = [
    '## Data portal',
    '',
    machine(),
    '',
    'From `npm run bench` (bench/portal.ts): `ecpds-edge serve` (the compiled build) on Postgres, serving ' +
      "`/portal/data/` to an incoming user logged in with HTTP Basic on every request, against Debian's " +
      'nginx serving the same files from disk, both over TLS 1.3 on loopback with the same certificate ' +
      `and the same cipher suite (${CIPHER}, asked for by the clients and set in nginx), nginx with one worker ` +
      'process, `sendfile on` and no access log. The clients are the same for both: curl for the big file, ' +
      "Node's https client for the rest, in the bench's process. Client and servers share the machine's " +
      `two cores. Each figure is the median of ${RUNS} runs, the service's and nginx's in turns. ` +
      `Load average before and after the run: ${loadBefore} and ${loadAverage()}.`,
    '',
  ];
  if (downloadRows.length > 0) {
    lines.push(
      `**One ${bigSize()} download** (\`curl -o /dev/null\`, HTTP/1.1). CPU is the serving process's ` +
        `(nginx: its worker) during the download; peak RSS is its resident memory's peak during the download` +
        `${peakSinceStart ? ' (since its start: the peak could not be reset)' : ''}.`,
      '',
      '| Server | Negotiated | Speed (runs) | Server CPU s | Peak RSS MiB |',
      '|---|---|---|---|---|',
      ...downloadRows.map(
        (r) =>
          `| ${r.server} | ${r.cipher} | ${mb(median(r.runs.map((x) => x.speed)))} MB/s ` +
          `(${r.runs.map((x) => mb(x.speed)).join(', ')}) | ${median(r.runs.map((x) => x.cpuSeconds)).toFixed(2)} ` +
          `| ${Math.round(Math.max(...r.runs.map((x) => x.peakMiB)))} |`,
      ),
      '',
    );
  }
  if (firstByteRows.length > 0) {
    lines.push(
      `**${AT_ONCE} downloads at once** (${AT_ONCE} distinct files, every body read to its end): time from ` +
        'sending a request to the first byte of its body. On open connections each was opened and used for a ' +
        'HEAD before; on new ones, the TCP connection and a full TLS handshake (no session resumed) come first. ' +
        "Files of 1 KiB show the requests' own cost, without the bodies sharing the machine. CPU is the serving " +
        "processes' per download: the service's with its database's backends, nginx's worker.",
      '',
      '| Server | Files | Connections | First byte p50 ms | p99 ms | All done, s | CPU per download ms |',
      '|---|---|---|---|---|---|---|',
      ...firstByteRows.map(
        (r) =>
          `| ${r.server} | ${r.dir === 'small' ? '10 MiB' : '1 KiB'} ` +
          `| ${r.open ? 'open (kept alive)' : 'new, TLS handshake included'} ` +
          `| ${ms(median(r.runs.map((x) => x.p50)))} | ${ms(median(r.runs.map((x) => x.p99)))} ` +
          `| ${median(r.runs.map((x) => x.seconds)).toFixed(2)} | ${median(r.runs.map((x) => x.cpuMs)).toFixed(2)} |`,
      ),
      '',
    );
  }
  if (listingRows.length > 0) {
    lines.push(
      `**Listings** of destinations of ${LISTED.toLocaleString('en')} files each (JSON, the default page of 1,000), ` +
        `one request at a time over one open connection, ${LIST_SAMPLES} requests after ${LIST_WARMUP}: request ` +
        "to last byte. Beside each, the repository's same read (`list`, one entry more than the page) " +
        "in the bench's process, without HTTP, login or rendering.",
      '',
      '| Listing | Entries | p50 ms | p99 ms | Repository alone p50 ms | p99 ms |',
      '|---|---|---|---|---|---|',
      ...listingRows.map(
        (r) =>
          `| ${r.scenario} | ${r.entries.toLocaleString('en')} | ${ms(r.service.p50)} | ${ms(r.service.p99)} ` +
          `| ${Number.isNaN(r.repository.p50) ? '-' : ms(r.repository.p50)} ` +
          `| ${Number.isNaN(r.repository.p99) ? '-' : ms(r.repository.p99)} |`,
      ),
      '',
    );
  }
  lines.push(...targets());
  return lines.join('\n');
}

function targets(): string[] {
  const rows: string[] = [];
  const met = (ok: boolean) => (ok ? 'met' : '**not met**');
  const [portal, nginx] = downloadRows;
  if (portal && nginx) {
    const share = median(portal.runs.map((x) => x.speed)) / median(nginx.runs.map((x) => x.speed));
    rows.push(`| One ${bigSize()} download at ≥ 80% of nginx | ${Math.round(100 * share)}% | ${met(share >= 0.8)} |`);
  }
  const ttfb = firstByteRows.find((r) => r.server === 'ecpds-edge serve' && r.dir === 'small' && r.open);
  if (ttfb) {
    const p99 = median(ttfb.runs.map((x) => x.p99));
    rows.push(
      `| 100 downloads of 10 MiB at once: p99 time to first byte ≤ 50 ms | ${ms(p99)} ms | ${met(p99 <= 50)} |`,
    );
  }
  const first = listingRows[0];
  if (first) {
    rows.push(
      `| Listing a destination of 100,000 files: first page p50 ≤ 50 ms | ${ms(first.service.p50)} ms ` +
        `| ${met(first.service.p50 <= 50)} |`,
    );
  }
  return rows.length === 0 ? [] : ['| Target | Measured | |', '|---|---|---|', ...rows, ''];
}

main()
  .then(() => process.exit(0))
  .catch((e) => {
    console.error(e);
    process.exit(1);
  });
