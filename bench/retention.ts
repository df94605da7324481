/**
 * The claim with and without a year of ended transfers past the retention limit, on Postgres, then
 * the purge of those: `node --import tsx bench/retention.ts`. Sizes: BENCH_RETENTION_TRANSFERS
 * (live and recent, default 1,000,000), BENCH_RETENTION_RETIRED (old, default 2,000,000).
 */
import postgres from 'postgres';
import { claimBenchmark } from './claims.ts';
import { log } from './support.ts';

const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const transfers = Number(process.env.BENCH_RETENTION_TRANSFERS ?? 1_000_000);
const retired = Number(process.env.BENCH_RETENTION_RETIRED ?? 2_000_000);

async function onFreshDatabase<T>(name: string, work: (url: string) => Promise<T>): Promise<T> {
  const admin = postgres(PG.href, { max: 1, onnotice: () => undefined });
  await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.unsafe(`create database ${name}`);
  const url = new URL(PG.href);
  url.pathname = `/${name}`;
  try {
    return await work(url.href);
  } finally {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

const waiting = Math.round(transfers / 10);
const results = [];
for (const old of [0, retired]) {
  log(`retention: ${transfers} transfers, ${old} retired`);
  const figures = await onFreshDatabase('ecpds_bench_retention', (url) =>
    claimBenchmark(url, { transfers, waiting, retired: old }),
  );
  log(JSON.stringify(figures));
  results.push(figures);
}
process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
