/**
 * The S3 endpoint's figures (BENCHMARKS.md, "Data portal: S3 endpoint"): `ecpds-edge serve` (the
 * compiled build) on Postgres, one 1 GiB file downloaded with curl to /dev/null over the HTTPS
 * portal (`/portal/data/`, Basic) and as an S3 GetObject (`/portal/s3/`) signed in the
 * Authorization header (curl's own `--aws-sigv4`) and by a presigned URL (aws4fetch), in turns,
 * the same client and cipher for each. Each row is the median of BENCH_RUNS (default 3) runs;
 * BENCH_PORTAL_BIG_MIB changes the file's size.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AwsV4Signer } from 'aws4fetch';
import postgres from 'postgres';
import { loadTls } from '../functions/node/tls.ts';
import { CIPHER } from './https-client.ts';
import { BIG, FILES, PASSWORD, prepareDatabase, setUpScene, USER, userAuth, writeFile } from './portal-scene.ts';
import { cpuOf, log, machine, median, postgresCpu, startService, stop, waitFor, writeBenchFile } from './support.ts';

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const BIG_BYTES = Number(process.env.BENCH_PORTAL_BIG_MIB ?? 1024) * 1024 * 1024;
const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const PORT = 19720;
const TARGET = 0.7;

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-portal-s3-')));
const sources = path.join(tmp, 'src');
const admin = postgres(PG.href, { max: 1, onnotice: () => undefined });
const database = `ecpds_bench_portal_s3_${process.pid}`;
const dbUrl = new URL(PG);
dbUrl.pathname = `/${database}`;
const mb = (bytesPerSecond: number) => Math.round(bytesPerSecond / 1e6);

/** One download to /dev/null with curl (TLS 1.3, the bench's cipher): bytes per second, as curl measures them. */
function curlSpeed(url: string, args: string[]): Promise<number> {
  const all = ['--http1.1', '--tlsv1.3', '--tls13-ciphers', CIPHER, '-k', '-sS', '-o', '/dev/null'];
  all.push('-w', '%{http_code} %{size_download} %{speed_download}', ...args, url);
  return new Promise((resolve, reject) => {
    const child = spawn('curl', all, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('exit', () => {
      const [code, size, speed] = out.trim().split(' ');
      if (code !== '200' || Number(size) !== BIG_BYTES) reject(new Error(`${url}: ${code}, ${size} bytes`));
      else resolve(Number(speed));
    });
  });
}

interface Row {
  name: string;
  speeds: number[];
  cpu: number[];
}

async function main() {
  await loadTls({ dataDir: tmp, tlsCertFile: null, tlsKeyFile: null } as never);
  log('portal-s3: writing the file');
  writeFile(path.join(sources, FILES, BIG), BIG_BYTES);
  await admin.unsafe(`create database "${database}"`);
  await prepareDatabase(dbUrl.href);
  const service = startService(tmp, PORT, {
    DATABASE_URL: dbUrl.href,
    ECPDS_DATA_DIR: path.join(tmp, 'data'),
    // Its retriever stores the files put; its destinations are never started, so nothing is sent.
    ECPDS_MOVER: '1',
  });
  const rows: Row[] = [
    { name: 'HTTPS portal, `/portal/data/` (Basic)', speeds: [], cpu: [] },
    { name: 'S3 GetObject, Authorization header (curl `--aws-sigv4`)', speeds: [], cpu: [] },
    { name: 'S3 GetObject, presigned URL (aws4fetch)', speeds: [], cpu: [] },
  ];
  try {
    const base = `https://127.0.0.1:${PORT}`;
    await waitFor(`${base}/v1/version`);
    const sql = postgres(dbUrl.href, { max: 1, onnotice: () => undefined });
    await setUpScene(sql, base, sources, [BIG]);
    await sql.end();
    const s3Url = `${base}/portal/s3/${FILES}/${BIG}`;
    const presigned = async () => {
      const url = new URL(s3Url);
      url.searchParams.set('X-Amz-Expires', '3600');
      const signer = new AwsV4Signer({
        url: url.href,
        accessKeyId: USER,
        secretAccessKey: PASSWORD,
        service: 's3',
        region: 'us-east-1',
        signQuery: true,
      });
      return (await signer.sign()).url.href;
    };
    const ways: Array<() => Promise<number>> = [
      () => curlSpeed(`${base}/portal/data/${FILES}/${BIG}`, ['-H', `authorization: ${userAuth}`]),
      () => curlSpeed(s3Url, ['--aws-sigv4', 'aws:amz:us-east-1:s3', '--user', `${USER}:${PASSWORD}`]),
      async () => curlSpeed(await presigned(), []),
    ];
    // One unrecorded round: compiled code and the file's pages warm.
    for (const way of ways) await way();
    for (let run = 0; run < RUNS; run++) {
      for (const [i, way] of ways.entries()) {
        const cpu = cpuOf(service.pid!) + postgresCpu(database);
        rows[i]!.speeds.push(await way());
        rows[i]!.cpu.push((cpuOf(service.pid!) + postgresCpu(database) - cpu) / 1e6);
      }
      log(`run ${run + 1}: ${rows.map((r) => `${mb(r.speeds.at(-1)!)} MB/s`).join(', ')}`);
    }
  } finally {
    await stop(service);
    await admin.unsafe(`drop database if exists "${database}" with (force)`).catch(() => undefined);
    await admin.end();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const text = report(rows);
  writeBenchFile(text);
}

function report(rows: Row[]) {
  const https = median(rows[0]!.speeds);
  const size = `${(BIG_BYTES / 2 ** 30).toFixed(BIG_BYTES % 2 ** 30 ? 2 : 0)} GiB`;
  const table = rows.map((r) => {
    const speed = median(r.speeds);
    const ratio = `${Math.round((speed / https) * 100)}%`;
    return `| ${r.name} | ${mb(speed)} | ${ratio} | ${median(r.cpu).toFixed(2)} |`;
  });
  const worst = Math.min(...rows.slice(1).map((r) => median(r.speeds) / https));
  return [
    '## Data portal: S3 endpoint',
    '',
    `\`node --import tsx bench/portal-s3.ts\` after \`npm run build\`. ${machine()}`,
    '',
    `One ${size} file of random bytes with curl to /dev/null (TLS 1.3, ${CIPHER}), \`ecpds-edge serve\` on`,
    `Postgres, the HTTPS portal and the S3 endpoint in turns in the same run; median of ${RUNS} runs each.`,
    '',
    '| Download | MB/s | of HTTPS | CPU s (server and Postgres) |',
    '| --- | --- | --- | --- |',
    ...table,
    '',
    `Each run, in MB/s: ${rows.map((r) => `${r.name.split(',')[0]} ${r.speeds.map(mb).join(', ')}`).join('; ')}.`,
    '',
    `Target: S3 GetObject at ≥ ${TARGET * 100}% of the HTTPS portal's download: ` +
      `${worst >= TARGET ? 'met' : 'not met'} (the slower S3 row at ${Math.round(worst * 100)}%). Both read the`,
    "file through the same source reader and body (functions/portal/download.ts); the S3 request's own",
    'cost is its signature check (an HMAC chain over the canonical request) before the first byte.',
  ].join('\n');
}

await main();
