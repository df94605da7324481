import type { ChildProcess } from 'node:child_process';
/**
 * `npm run soak`: a mixed load on one `ecpds-edge serve` over Postgres for SOAK_SECONDS
 * (default 600), sampling the server's resident memory. It passes when no request got an
 * unexpected answer and memory stayed flat; the result is written to BENCHMARKS.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { openPostgres } from '../db/client.ts';
import { loadTls } from '../functions/node/tls.ts';
import { metadataBody, type Scale } from './seed.ts';
import {
  auth,
  log,
  machine,
  median,
  memoryOf,
  prepare,
  startService,
  stop,
  waitFor,
  writeBenchFile,
} from './support.ts';

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const CONNECTIONS = Number(process.env.SOAK_CONNECTIONS ?? 8);
const SAMPLE_MS = 10_000;
const SOAK_HEADING = '## Soak';
// Memory counts as flat when the last minute's median is within this much of the median of
// the minute after warm-up (caches filled, JIT settled).
const FLAT_GROWTH = 0.1;
const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const SCALE: Scale = { destinations: 1_000, cycles: 25, metadataFields: 10 };
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-soak-'));

type Step = { method: string; path: string; body?: string; expect: number };
let sequence = 0;

/**
 * What one connection does, over and over: reads of every kind, a metadata replace, and a data
 * file's life (put, size, delete), each with the answer it must get.
 */
function mix(source: string): Array<(previous: { id?: number }) => Step> {
  const metadata = metadataBody(SCALE.metadataFields);
  return [
    () => ({ method: 'GET', path: '/v1/destination/type/list', expect: 200 }),
    () => ({
      method: 'GET',
      path: `/v1/destination/BENCH_${String(1 + (sequence % SCALE.destinations)).padStart(6, '0')}`,
      expect: 200,
    }),
    () => ({ method: 'GET', path: '/v1/destination/list?iso=fr', expect: 200 }),
    () => ({ method: 'GET', path: '/v1/monitoring/summary', expect: 200 }),
    () => ({ method: 'GET', path: '/v1/destination/BENCH_META/metadata', expect: 200 }),
    () => ({ method: 'PUT', path: '/v1/destination/BENCH_META/metadata', body: metadata, expect: 200 }),
    () => ({
      method: 'GET',
      path:
        `/v1/datafile/put?destination=BENCH_META&source=${encodeURIComponent(source)}` +
        `&uniquename=soak-${process.pid}-${++sequence}`,
      expect: 200,
    }),
    (previous) => ({ method: 'GET', path: `/v1/datafile/size?id=${previous.id}`, expect: 200 }),
    (previous) => ({ method: 'DELETE', path: `/v1/datafile/del?id=${previous.id}`, expect: 200 }),
    // A service error, 500 with a JSON message (wire-decisions §1).
    () => ({ method: 'GET', path: '/v1/destination/NO_SUCH_DESTINATION', expect: 500 }),
  ];
}

async function main() {
  fs.mkdirSync(path.join(tmp, 'src'), { recursive: true });
  const source = path.join(tmp, 'src/file.bin');
  fs.writeFileSync(source, Buffer.alloc(1 << 16));
  await loadTls({ dataDir: tmp, tlsCertFile: null, tlsKeyFile: null } as never);
  const admin = postgres(PG.toString(), { max: 1, onnotice: () => undefined });
  const name = `ecpds_soak_${process.pid}`;
  await admin.unsafe(`create database "${name}"`);
  const url = new URL(PG);
  url.pathname = `/${name}`;
  let child: ChildProcess | undefined;
  try {
    log('seeding');
    await prepare(openPostgres(url.toString(), { max: 2 }), SCALE);
    const port = 19600;
    child = startService(tmp, port, { DATABASE_URL: url.toString() });
    const base = `https://127.0.0.1:${port}`;
    await waitFor(`${base}/v1/version`);
    const result = await soak(base, child.pid!, source);
    writeBenchFile(report(result));
    log(result.passed ? 'soak passed' : 'soak FAILED');
    if (!result.passed) process.exitCode = 1;
  } finally {
    if (child) await stop(child);
    await admin.unsafe(`drop database if exists "${name}" with (force)`).catch(() => undefined);
    await admin.end();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function soak(base: string, pid: number, source: string) {
  const steps = mix(source);
  const unexpected = new Map<string, number>();
  const samples: Array<{ at: number; rssMiB: number }> = [];
  const started = Date.now();
  const sampler = setInterval(
    () => samples.push({ at: (Date.now() - started) / 1000, rssMiB: memoryOf(pid, 'VmRSS') }),
    SAMPLE_MS,
  );
  const requests = steps.map((step, i) => ({
    setupRequest: (req: object, context: { id?: number; step?: Step }) => {
      const next = step(context);
      context.step = next;
      return {
        ...req,
        method: next.method,
        path: next.path,
        body: next.body,
        headers: { authorization: auth, ...(next.body && { 'content-type': 'application/json' }) },
      };
    },
    onResponse: (status: number, body: string, context: { id?: number; step?: Step }) => {
      const expected = context.step!;
      if (status !== expected.expect) {
        const key = `${expected.method} ${expected.path.replace(/[?].*$/, '').replace(/\d+/g, 'N')} → ${status}`;
        unexpected.set(key, (unexpected.get(key) ?? 0) + 1);
      }
      if (i === 6 && status === 200) context.id = (JSON.parse(body) as { id: number }).id;
    },
  }));
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: requests as never,
  });
  clearInterval(sampler);
  const early = median(samples.filter((s) => s.at > 60 && s.at <= 120).map((s) => s.rssMiB));
  const late = median(samples.filter((s) => s.at > SECONDS - 60).map((s) => s.rssMiB));
  const growth = early > 0 ? (late - early) / early : 0;
  const errors = result.errors + result.timeouts;
  const unexpectedCount = [...unexpected.values()].reduce((a, b) => a + b, 0);
  const passed = errors === 0 && unexpectedCount === 0 && growth <= FLAT_GROWTH;
  return { result, samples, early, late, growth, errors, unexpected, unexpectedCount, passed };
}

function report(r: Awaited<ReturnType<typeof soak>>): string {
  const minutes = (SECONDS / 60).toFixed(SECONDS % 60 ? 1 : 0);
  return [
    SOAK_HEADING,
    '',
    `Measured by \`npm run soak\` on ${new Date().toISOString().slice(0, 10)}: ${machine()}. ` +
      `${minutes} minutes of mixed load (${CONNECTIONS} connections over HTTPS on loopback) ` +
      `on Postgres with ${SCALE.destinations.toLocaleString('en')} destinations: ` +
      'type list, one destination, a filtered destination list, the monitoring summary, metadata get and replace, ' +
      'and a data file put, size and delete, plus an unknown destination that must answer its service error (500).',
    '',
    `**${r.passed ? 'Passed' : 'Failed'}.**`,
    '',
    '| | |',
    '|---|---|',
    `| Requests | ${r.result.requests.total.toLocaleString('en')} (${Math.round(r.result.requests.average)} req/s) |`,
    `| Latency p50 / p99 | ${r.result.latency.p50} ms / ${r.result.latency.p99} ms |`,
    `| Unexpected answers | ${r.unexpectedCount}` +
      `${r.unexpectedCount ? ` (${[...r.unexpected].map(([k, v]) => `${k}: ${v}`).join('; ')})` : ''} |`,
    `| Connection errors and timeouts | ${r.errors} |`,
    `| Server RSS, median of minute 2 → of the last minute | ${r.early.toFixed(0)} MiB → ${r.late.toFixed(0)} MiB ` +
      `(${(100 * r.growth).toFixed(1)}%, limit ${100 * FLAT_GROWTH}%) |`,
    '',
    `RSS every ${SAMPLE_MS / 1000} s (MiB): ${r.samples.map((s) => s.rssMiB.toFixed(0)).join(' ')}`,
    '',
  ].join('\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
