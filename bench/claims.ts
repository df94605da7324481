/**
 * The claim at scale, on Postgres. By default 1,000,000 transfers over 10,000 started destinations:
 * half of them wait for a later time (scheduled ahead, or backing off after a failure) on every
 * destination, 100,000 are due on 100 of the destinations, the rest ended. Measures the statement a
 * mover runs to find due destinations and the claim of one due destination's transfers (one short
 * transaction), each timed on its own.
 */
import postgres from 'postgres';
import { claimTransfers } from '../core/dissemination/claims.ts';
import type { Ports } from '../core/ports.ts';
import { openPostgres } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { benchPorts, log, sleep } from './support.ts';

export interface ClaimScale {
  transfers: number;
  /** Transfers due now, on the destinations with due work. */
  waiting: number;
  /** Ended transfers older than the retention limit, seeded besides the others. */
  retired?: number;
  destinations?: number;
  /** Destinations with due work (the first of every destinations/due). */
  dueDestinations?: number;
  /** The share of the transfers waiting for a later time, over every destination. */
  laterShare?: number;
}

export const SCALE: Required<Omit<ClaimScale, 'retired'>> = {
  transfers: 1_000_000,
  waiting: 100_000,
  destinations: 10_000,
  dueDestinations: 100,
  laterShare: 0.5,
};

export interface ClaimFigures {
  transfers: number;
  waiting: number;
  destinations: number;
  dueDestinations: number;
  later: number;
  seedSeconds: number;
  claim: { p50: number; p99: number; max: number; samples: number };
  due: { p50: number; p99: number; max: number; samples: number };
  /** Ended transfers older than the retention limit, seeded besides the others. */
  retired: number;
  /** Rows of data_transfers read per claim (index and sequential reads, the due looks included). */
  rowsPerClaim: number;
  /** The purge of the retired rows, a batch of 1,000 per transaction (when some were seeded). */
  purge: { batches: number; rows: number; seconds: number; batch: ReturnType<typeof summary> } | null;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const summary = (ms: number[]) => {
  const sorted = [...ms].sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted.at(-1)!, samples: ms.length };
};

export async function claimBenchmark(databaseUrl: string, wanted: ClaimScale = SCALE) {
  // Anything left out is as before this scale existed: 1,000 destinations, all with due work, none waiting later.
  const scale = {
    destinations: 1000,
    dueDestinations: wanted.destinations ?? 1000,
    laterShare: 0,
    retired: 0,
    ...wanted,
  };
  const { destinations, dueDestinations, retired } = scale;
  const later = Math.round(scale.transfers * scale.laterShare);
  const handle = openPostgres(databaseUrl, { max: 4 });
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
  const name = (index: string) => `'CLAIM_' || lpad((${index})::text, 5, '0')`;
  // The n-th destination with due work, of every destinations/dueDestinations.
  const dueName = (n: string) => name(`1 + (${n}) * ${Math.floor(destinations / dueDestinations)}`);
  try {
    await migrate(handle);
    const started = Date.now();
    const dueEvery = Math.max(1, Math.round((scale.transfers - later) / scale.waiting));
    await sql.unsafe(`
      insert into destinations (name, country_iso, type, status_code, max_connections)
      select ${name('g')}, 'gb', 1, 'WAIT', -1 from generate_series(1, ${destinations}) g;
      insert into data_files (id, source, size, registered_by)
      select g, '/srv/out/f' || g, 65536, 'bench' from generate_series(1, ${scale.transfers}) g;
      -- Waiting for a later time, on every destination: scheduled up to a day ahead, or backing off.
      insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at,
        queue_at)
      select g, ${name(`1 + g % ${destinations}`)}, 'f' || g, g % 100, case when g % 3 = 0 then 'RETR' else 'WAIT' end,
        now(), now() + interval '2 days', now() + (1 + g % 86400 || ' s')::interval
      from generate_series(1, ${later}) g;
      -- Due on the destinations with due work, and ended everywhere.
      insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at,
        queue_at)
      select g,
        case when g % ${dueEvery} = 0 then ${dueName(`g / ${dueEvery} % ${dueDestinations}`)}
          else ${name(`1 + g % ${destinations}`)} end,
        'f' || g, g % 100, case when g % ${dueEvery} = 0 then 'WAIT' else 'DONE' end,
        now() - interval '1 hour', now() + interval '2 days', now() - interval '1 hour' + (g || ' ms')::interval
      from generate_series(${later + 1}, ${scale.transfers}) g;
      ${retiredRows(scale.transfers, retired, destinations)}
      analyze data_transfers; analyze data_files; analyze destinations; analyze destination_queue;`);
    const seedSeconds = (Date.now() - started) / 1000;
    log(`claims: seeded ${scale.transfers} transfers in ${seedSeconds.toFixed(0)} s`);

    const ports = benchPorts(handle);
    const before = await rowsRead(sql);
    const claim: number[] = [];
    const due: number[] = [];
    const spacing = Math.floor(destinations / dueDestinations);
    for (let i = 0; i < 2000; i++) {
      const destination = `CLAIM_${String(1 + ((i * 7) % dueDestinations) * spacing).padStart(5, '0')}`;
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
      // Through the running index (claimed rows carry their mover), so that it reads no ended row.
      if (i % 50 === 49) {
        await sql.unsafe(`update data_transfers set status = 'DONE' where mover is not null and status = 'EXEC'`);
      }
      if (i % 500 === 499) await sleep(10);
    }
    const claims = 2000;
    const rowsPerClaim = Math.round((await rowsRead(sql)) - before) / claims;
    const purge = retired > 0 ? await purgeAll(ports) : null;
    return {
      retired,
      rowsPerClaim,
      purge,
      transfers: scale.transfers,
      waiting: scale.waiting,
      destinations,
      dueDestinations,
      later,
      seedSeconds,
      claim: summary(claim.slice(100)),
      due: summary(due.slice(25)),
    } satisfies ClaimFigures;
  } finally {
    await sql.end();
    await handle.close();
  }
}

/**
 * Ended transfers from 211 to 576 days ago, spread like the rest over the destinations, ten runs of
 * each target: what a year of sending leaves when nothing purges.
 */
function retiredRows(first: number, count: number, destinations: number) {
  if (count === 0) return '';
  const range = `generate_series(${first + 1}, ${first + count}) g`;
  const step = Math.floor((365 * 86_400_000) / count);
  const ago = `now() - interval '211 days' - ((g - ${first})::bigint * ${step} || ' ms')::interval`;
  return `
    insert into data_files (id, source, size, registered_by)
    select g, '/srv/out/r' || g, 65536, 'bench' from ${range};
    insert into data_transfers (data_file_id, destination, target, unique_name, priority, status, scheduled_at,
      expires_at, queue_at, created_at, updated_at)
    select g, 'CLAIM_' || lpad((1 + g % ${destinations})::text, 5, '0'), 'r' || (g / 10), 'run' || g, g % 100, 'DONE',
      ${ago}, ${ago} + interval '1 day', ${ago}, ${ago}, ${ago}
    from ${range};
    insert into transfer_history (transfer_id, destination, status, at)
    select id, destination, s, updated_at from data_transfers, unnest(array['WAIT', 'EXEC', 'DONE']) s
    where status = 'DONE' and updated_at < now() - interval '210 days';
    analyze transfer_history;`;
}

/** Reads of data_transfers so far, by index or sequential scan (statistics flushed first). */
async function rowsRead(sql: postgres.Sql) {
  await sleep(1100);
  await sql.unsafe('select pg_stat_force_next_flush()').catch(() => undefined);
  const [row] = await sql.unsafe(`select coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) as n
    from pg_stat_user_tables where relname = 'data_transfers'`);
  return Number(row?.n ?? 0);
}

/** The purge's walk over the retired rows, batch after batch, as the sweep runs it. */
async function purgeAll(ports: Ports) {
  const before = new Date(Date.now() - 210 * 86_400_000);
  const batch: number[] = [];
  let rows = 0;
  const started = performance.now();
  for (;;) {
    const t = performance.now();
    const purged = await ports.repos.retention.purgeAged(before, 1000);
    batch.push(performance.now() - t);
    rows += purged.transfers;
    if (purged.transfers < 1000) break;
  }
  return { batches: batch.length, rows, seconds: (performance.now() - started) / 1000, batch: summary(batch) };
}
