/** The `test`-method movers alone: `node --import tsx bench/test-method-only.ts` after `npm run build`. */
import postgres from 'postgres';
import { log } from './support.ts';
import { testMethodThroughput } from './test-method-movers.ts';

const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const admin = postgres(PG.href, { max: 1, onnotice: () => undefined });
try {
  const transfers = Number(process.env.BENCH_TRANSFERS ?? 10_000);
  const movers = Number(process.env.BENCH_MOVERS ?? 4);
  log(JSON.stringify(await testMethodThroughput(admin, PG, { movers, transfers, destinations: 32 })));
} finally {
  await admin.end();
}
process.exit(0);
