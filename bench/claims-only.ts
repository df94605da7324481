/** The claim benchmark alone, on a database of its own: `node --import tsx bench/claims-only.ts`. */
import postgres from 'postgres';
import { claimBenchmark } from './claims.ts';
import { log } from './support.ts';

const PG = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const admin = postgres(PG, { max: 1, onnotice: () => undefined });
const name = `ecpds_bench_claims_${process.pid}`;
await admin.unsafe(`create database ${name}`);
try {
  const url = new URL(PG);
  url.pathname = `/${name}`;
  const figures = await claimBenchmark(url.href);
  log(JSON.stringify(figures));
} finally {
  if (process.env.BENCH_KEEP) log(`kept ${name}`);
  else await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.end();
}
process.exit(0);
