/**
 * The s3 and http transfer methods against local servers on loopback: many small files with a
 * few in flight, then one big file (single PUT and multipart). `node --import tsx
 * bench/transfer-methods.ts`; BENCH_BIG_MIB (default 256) sets the big file's size. The sources
 * are generated in memory, so the figures are the method plus the server, not a disk.
 */
import { httpMethod } from '../functions/transfer-methods/http.ts';
import { s3Method } from '../functions/transfer-methods/s3.ts';
import { startHttpSink } from '../test/support/servers/http-sink.ts';
import { startS3 } from '../test/support/servers/s3.ts';
import { hostFor, payload } from '../test/support/transfer.ts';

const MIB = 1024 * 1024;
const SMALL = 64 * 1024;
const COUNT = 200;
const CONCURRENCY = 8;
const BIG = Number(process.env.BENCH_BIG_MIB ?? 256) * MIB;

async function* repeat(block: Uint8Array, size: number) {
  for (let at = 0; at < size; at += block.byteLength) yield block.subarray(0, Math.min(block.byteLength, size - at));
}

async function many(send: (i: number) => Promise<unknown>) {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < COUNT) await send(next++);
    }),
  );
  return performance.now() - started;
}

async function timed(send: () => Promise<unknown>) {
  const started = performance.now();
  await send();
  return performance.now() - started;
}

const line = (what: string, ms: number, bytes: number, files = 1) =>
  console.log(
    `${what.padEnd(64)} ${(ms / 1000).toFixed(2).padStart(7)} s ` +
      `${((files * 1000) / ms).toFixed(1).padStart(8)} files/s` +
      ` ${((bytes * 1000) / ms / MIB).toFixed(1).padStart(7)} MiB/s`,
  );

const never = new AbortController().signal;
const small = payload(SMALL);
const block = payload(MIB);
const s3 = await startS3();
const sink = await startHttpSink();
try {
  for (const [label, url] of [
    ['s3rver behind the checking front', s3.url],
    ['s3rver direct', s3.directUrl],
  ] as const) {
    const options = { 's3.url': url, 's3.bucketName': s3.bucket, 's3.enablePathStyleAccess': 'yes' };
    const host = hostFor('s3', { login: 'S3RVER', password: 'S3RVER', directory: 'bench' }, options);
    const method = s3Method();
    const ms = await many((i) => method.send(host, { target: `small/${i}`, size: SMALL }, repeat(small, SMALL), never));
    line(`s3 ${COUNT} x 64 KiB, ${CONCURRENCY} in flight, ${label}`, ms, COUNT * SMALL, COUNT);
    const put = await timed(() => method.send(host, { target: 'big-put', size: BIG }, repeat(block, BIG), never));
    line(`s3 ${BIG / MIB} MiB, one PUT, ${label}`, put, BIG);
    const mp = hostFor(
      's3',
      { login: 'S3RVER', password: 'S3RVER', directory: 'bench' },
      {
        ...options,
        's3.multipartSize': 5 * MIB,
      },
    );
    const multi = await timed(() => method.send(mp, { target: 'big-mp', size: BIG }, repeat(block, BIG), never));
    line(`s3 ${BIG / MIB} MiB, multipart 10 MiB parts x 2, ${label}`, multi, BIG);
  }
  const host = hostFor('http', { hostname: `127.0.0.1:${sink.port}`, directory: 'bench' });
  const method = httpMethod();
  const ms = await many((i) => method.send(host, { target: `small-${i}`, size: SMALL }, repeat(small, SMALL), never));
  line(`http ${COUNT} x 64 KiB, ${CONCURRENCY} in flight`, ms, COUNT * SMALL, COUNT);
  const put = await timed(() => method.send(host, { target: 'big', size: BIG }, repeat(block, BIG), never));
  line(`http ${BIG / MIB} MiB, one PUT`, put, BIG);
  console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
} finally {
  await s3.stop();
  await sink.stop();
}
