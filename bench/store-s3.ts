/**
 * The S3 store's write (`BENCH_SIZES=store-s3` of `npm run bench`): one file of BENCH_STORE_MIB
 * (default 1024) random bytes on disk, read as a stream into `s3ObjectStore`, against `rclone copy`
 * of the same file to the same s3rver, in turns (BENCH_ROUNDS, default 3), after one unrecorded
 * round. `curl -T` of the file in one PUT shows what s3rver itself takes from one stream. s3rver
 * runs in its own process, so that its CPU is measured apart and shares no event loop with the store.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { s3ObjectStore } from '../functions/store/s3-store.ts';
import { cpuOf, freePort, log, machine, median, ROOT, stop, writeBenchFile } from './support.ts';

const MIB = 1024 * 1024;
const BYTES = Number(process.env.BENCH_STORE_MIB ?? 1024) * MIB;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TARGET = 0.7;
const BUCKET = 'bench';
const KEY = 'S3RVER';

interface Run {
  seconds: number;
  /** CPU seconds of s3rver's process, and of the writer (the bench process for the store, the tool otherwise). */
  serverCpu: number;
  writerCpu: number;
}
interface Way {
  name: string;
  write: (round: number) => Promise<number>;
  runs: Run[];
}

async function startS3rver(dir: string, port: number): Promise<ChildProcess> {
  const bin = path.join(ROOT, 'node_modules/s3rver/bin/s3rver.js');
  const args = [bin, '-d', dir, '-a', '127.0.0.1', '-p', String(port), '-s', '--configure-bucket', BUCKET];
  const child = spawn(process.execPath, args, { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/`).then(
      () => true,
      () => false,
    );
    if (up) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('s3rver did not start');
}

/** Runs a tool to its end, its output dropped but for the errors it reports on failure. */
function tool(cmd: string, args: string[], env: Record<string, string> = {}) {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
    let errors = '';
    child.stderr.on('data', (d) => (errors += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd}: ${code} ${errors.slice(0, 500)}`))));
  });
}

/** CPU seconds of every waited-for child so far (RUSAGE_CHILDREN), from /proc/self/stat's cutime and cstime. */
function childrenCpu(): number {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

function writeRandomFile(file: string, bytes: number) {
  const fd = fs.openSync(file, 'w');
  const block = randomBytes(16 * MIB);
  for (let at = 0; at < bytes; at += block.byteLength)
    fs.writeSync(fd, block, 0, Math.min(block.byteLength, bytes - at));
  fs.closeSync(fd);
}

export async function storeS3Bench() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-store-s3-'));
  const file = path.join(tmp, 'file.bin');
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  log(`store-s3: writing ${BYTES / MIB} MiB`);
  writeRandomFile(file, BYTES);
  const server = await startS3rver(path.join(tmp, 's3rver'), port);
  const store = s3ObjectStore({
    bucket: BUCKET,
    prefix: 'ours',
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: KEY, secretAccessKey: KEY, sessionToken: null },
  });
  const rclone = {
    RCLONE_CONFIG_BENCH_TYPE: 's3',
    RCLONE_CONFIG_BENCH_PROVIDER: 'Other',
    RCLONE_CONFIG_BENCH_ENDPOINT: endpoint,
    RCLONE_CONFIG_BENCH_ACCESS_KEY_ID: KEY,
    RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY: KEY,
    RCLONE_CONFIG_BENCH_REGION: 'us-east-1',
    RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE: 'true',
    // The environment's CA bundle makes rclone refuse its own HTTP transport; the endpoint is plain HTTP.
    AWS_CA_BUNDLE: '',
  };
  let peakRss = 0;
  let baseRss = Number.POSITIVE_INFINITY;
  const ways: Way[] = [
    {
      name: '`s3ObjectStore` write (16 MiB parts, 4 in flight)',
      runs: [],
      async write(round) {
        const cpu = process.cpuUsage();
        baseRss = Math.min(baseRss, process.memoryUsage().rss);
        const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
        try {
          const stream = fs.createReadStream(file);
          await store.write(`f${round}`, stream, new AbortController().signal, BYTES);
        } finally {
          clearInterval(sampler);
        }
        const used = process.cpuUsage(cpu);
        await store.remove([`f${round}`]);
        return (used.user + used.system) / 1e6;
      },
    },
    {
      name: '`rclone copy` (its defaults: 5 MiB chunks, 4 in flight)',
      runs: [],
      async write(round) {
        const before = childrenCpu();
        await tool('rclone', ['copyto', file, `bench:${BUCKET}/rclone/f${round}`], rclone);
        const after = childrenCpu();
        fs.rmSync(path.join(tmp, 's3rver', BUCKET, 'rclone'), { recursive: true, force: true });
        return after - before;
      },
    },
    {
      name: '`curl -T`, one PUT, unsigned (what s3rver takes from one stream)',
      runs: [],
      async write(round) {
        const before = childrenCpu();
        await tool('curl', ['-sS', '-f', '-T', file, `${endpoint}/${BUCKET}/curl/f${round}`]);
        const after = childrenCpu();
        fs.rmSync(path.join(tmp, 's3rver', BUCKET, 'curl'), { recursive: true, force: true });
        return after - before;
      },
    },
  ];
  try {
    for (let round = -1; round < ROUNDS; round++) {
      for (const way of ways) {
        const serverBefore = cpuOf(server.pid!);
        const started = performance.now();
        const writerCpu = await way.write(round);
        const seconds = (performance.now() - started) / 1000;
        const serverCpu = (cpuOf(server.pid!) - serverBefore) / 1e6;
        if (round >= 0) way.runs.push({ seconds, serverCpu, writerCpu });
        log(`store-s3 ${round < 0 ? 'warm-up' : `round ${round + 1}`}: ${way.name} ${mbps(seconds)} MB/s`);
      }
    }
  } finally {
    await stop(server);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  writeBenchFile(report(ways, peakRss, baseRss));
}

const mbps = (seconds: number) => Math.round(BYTES / seconds / 1e6);

function report(ways: Way[], peakRss: number, baseRss: number) {
  const speed = (way: Way) => BYTES / median(way.runs.map((r) => r.seconds)) / 1e6;
  const [ours, rclone] = ways as [Way, Way];
  const ratio = speed(ours) / speed(rclone);
  const size = `${(BYTES / 2 ** 30).toFixed(BYTES % 2 ** 30 ? 2 : 0)} GiB`;
  const cell = (values: number[]) => median(values).toFixed(1);
  return [
    '## Store: S3',
    '',
    `\`BENCH_SIZES=store-s3 npm run bench\`. ${machine()}`,
    '',
    `One ${size} file of random bytes on disk, written into s3rver (its own process, on the same disk) by each`,
    `way in turns, ${ROUNDS} rounds after an unrecorded one; each row is the median run.`,
    '',
    '| Write | MB/s | of rclone | CPU s: s3rver | CPU s: writer | Each run, MB/s |',
    '| --- | --- | --- | --- | --- | --- |',
    ...ways.map(
      (way) =>
        `| ${way.name} | ${Math.round(speed(way))} | ${Math.round((speed(way) / speed(rclone)) * 100)}% ` +
        `| ${cell(way.runs.map((r) => r.serverCpu))} | ${cell(way.runs.map((r) => r.writerCpu))} ` +
        `| ${way.runs.map((r) => mbps(r.seconds)).join(', ')} |`,
    ),
    '',
    `Target: the store's write at ≥ ${TARGET * 100}% of \`rclone copy\`'s throughput: ` +
      `${ratio >= TARGET ? 'met' : 'not met'} (${Math.round(ratio * 100)}%). Peak RSS of the bench process while ` +
      `the store wrote: ${Math.round(peakRss / MIB)} MiB (${Math.round(baseRss / MIB)} MiB before it wrote).`,
  ].join('\n');
}
