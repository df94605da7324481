/**
 * The claim at scale, on Postgres: 1,000,000 transfers, 100,000 of them waiting, over 1,000
 * started destinations. Measures the statement a mover runs to find due destinations and the
 * claim of one destination's due transfers (one short transaction), each timed on its own.
 */
import postgres from 'postgres';
import { claimTransfers } from '../core/dissemination/claims.ts';
import { openPostgres } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { benchPorts, log, sleep } from './support.ts';

export interface ClaimFigures {
  transfers: number;
  waiting: number;
  destinations: number;
  seedSeconds: number;
  claim: { p50: number; p99: number; max: number; samples: number };
  due: { p50: number; p99: number; max: number; samples: number };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const summary = (ms: number[]) => {
  const sorted = [...ms].sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted.at(-1)!, samples: ms.length };
};

export async function claimBenchmark(databaseUrl: string, scale = { transfers: 1_000_000, waiting: 100_000 }) {
  const destinations = 1000;
  const handle = openPostgres(databaseUrl, { max: 4 });
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
  try {
    await migrate(handle);
    const started = Date.now();
    await sql.unsafe(`
      insert into destinations (name, country_iso, type, status_code, max_connections)
      select 'CLAIM_' || lpad(g::text, 4, '0'), 'gb', 1, 'WAIT', -1 from generate_series(1, ${destinations}) g;
      insert into data_files (id, source, size, registered_by)
      select g, '/srv/out/f' || g, 65536, 'bench' from generate_series(1, ${scale.transfers}) g;
      insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at,
        queue_at)
      select g, 'CLAIM_' || lpad((1 + g % ${destinations})::text, 4, '0'), 'f' || g, g % 100,
        case when g % ${Math.round(scale.transfers / scale.waiting)} = 0 then 'WAIT' else 'DONE' end,
        now() - interval '1 hour', now() + interval '2 days', now() - interval '1 hour' + (g || ' ms')::interval
      from generate_series(1, ${scale.transfers}) g;
      analyze data_transfers; analyze data_files; analyze destinations;`);
    const seedSeconds = (Date.now() - started) / 1000;
    log(`claims: seeded ${scale.transfers} transfers in ${seedSeconds.toFixed(0)} s`);

    const ports = benchPorts(handle);
    const claim: number[] = [];
    const due: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const destination = `CLAIM_${String(1 + ((i * 7) % destinations)).padStart(4, '0')}`;
      let t = performance.now();
      await claimTransfers(ports, {
        destination,
        hostId: 'bench',
        mover: 'bench',
        destinationMax: 8,
        hostMax: 8,
        leaseMs: 60_000,
        wanted: 1,
      });
      claim.push(performance.now() - t);
      if (i % 4 === 0) {
        t = performance.now();
        await ports.repos.dissemination.dueDestinations(new Date(), 32);
        due.push(performance.now() - t);
      }
      // Transfers claimed are sent elsewhere: they leave EXEC as they would, so the counts stay realistic.
      if (i % 50 === 49) await sql.unsafe(`update data_transfers set status = 'DONE' where status = 'EXEC'`);
      if (i % 500 === 499) await sleep(10);
    }
    return {
      transfers: scale.transfers,
      waiting: scale.waiting,
      destinations,
      seedSeconds,
      claim: summary(claim.slice(100)),
      due: summary(due.slice(25)),
    } satisfies ClaimFigures;
  } finally {
    await sql.end();
    await handle.close();
  }
}
