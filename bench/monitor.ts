/**
 * The console monitor's queries at scale, on Postgres (BENCHMARKS.md, "Monitor pages"):
 * 10,000 destinations and 1,000,000 transfers (one destination holding 100,000 of them), each
 * transfer with its history, and a day of deliveries. Times what each page reads, median of 21.
 *
 *   node --import tsx bench/monitor.ts
 */
import postgres from 'postgres';
import { destinationDetail, destinationPage } from '../core/monitor/monitor.ts';
import { openPostgres } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { benchPorts, log, machine, writeBenchFile } from './support.ts';

const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const DESTINATIONS = 10_000;
const TRANSFERS = 1_000_000;
const BIG = 100_000;
const name = `ecpds_bench_monitor_${process.pid}`;

const admin = postgres(PG.href, { max: 1, onnotice: () => undefined });
await admin.unsafe(`create database ${name}`);
const url = new URL(PG);
url.pathname = `/${name}`;
const handle = openPostgres(url.href, { max: 4 });
const sql = postgres(url.href, { max: 1, onnotice: () => undefined });
const rows: string[][] = [];
try {
  await migrate(handle);
  const started = Date.now();
  // Destination MON_00001 holds BIG transfers; the others share the rest.
  await sql.unsafe(`
    insert into destinations (name, country_iso, type, status_code, scheduler_status)
    select 'MON_' || lpad(g::text, 5, '0'), 'gb', 1, case when g % 10 = 0 then 'HOLD' else 'WAIT' end,
      case when g % 3 = 0 then 'EXEC' else null end
    from generate_series(1, ${DESTINATIONS}) g;
    insert into destination_state (destination, last_success_at, last_error_at, last_error)
    select name, now() - interval '5 minutes', now() - interval '1 hour', 'Connection refused' from destinations;
    insert into data_files (id, source, size, registered_by)
    select g, '/srv/out/f' || g, 65536, 'bench' from generate_series(1, ${TRANSFERS}) g;
    insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at,
      queue_at, host_id, sent)
    select g,
      case when g <= ${BIG} then 'MON_00001'
        else 'MON_' || lpad((2 + g % ${DESTINATIONS - 1})::text, 5, '0') end,
      'f' || g, 99, (array['DONE','DONE','DONE','DONE','WAIT','RETR','FAIL','STOP','HOLD','DONE'])[1 + g % 10],
      now() - interval '1 day', now() + interval '1 day', now() - interval '1 day', '1', 65536
    from generate_series(1, ${TRANSFERS}) g;
    insert into transfer_history (transfer_id, destination, host_id, status, at, sent, comment)
    select id, destination, '1', status, now() - ((id % 1440) || ' minutes')::interval, 65536, 'bench'
    from data_transfers;
    analyze;`);
  log(`monitor: seeded in ${((Date.now() - started) / 1000).toFixed(0)} s`);

  const ports = benchPorts(handle);
  const median = async (what: string, load: string, work: () => Promise<unknown>) => {
    const times: number[] = [];
    for (let i = 0; i < 21; i++) {
      const t = performance.now();
      await work();
      times.push(performance.now() - t);
    }
    rows.push([what, load, `${times.sort((a, b) => a - b)[10]!.toFixed(1)} ms`]);
  };
  await median('Destinations, first page', '50 of 10,000', () => destinationPage(ports, {}));
  await median('Destinations, a later page', 'after MON_05000', () => destinationPage(ports, { after: 'MON_05000' }));
  await median('Destinations, shown HOLD', '50 of 1,000', () => destinationPage(ports, { shown: 'HOLD' }));
  await median('One destination, first page of transfers', '100 transfers', () =>
    destinationDetail(ports, 'MON_00002', {}),
  );
  await median('One destination, first page of transfers', '100,000 transfers', () =>
    destinationDetail(ports, 'MON_00001', {}),
  );
  await median('One destination, WAIT only, a page deep', '100,000 transfers', () =>
    destinationDetail(ports, 'MON_00001', { status: 'WAIT', before: 50_000 }),
  );
  const table = ['| Page | Load | p50 |', '| --- | --- | --- |', ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  writeBenchFile(
    `## Monitor pages\n\n${machine()}\n\n` +
      'From `node --import tsx bench/monitor.ts`: what each console monitor page reads (its queries, not ' +
      'the rendering), on Postgres with 10,000 destinations and 1,000,000 transfers, each with a ' +
      'history row, one destination holding 100,000 of them. Median of 21. The pages that include the ' +
      'destination of 100,000 transfers (the first page of destinations, its own page) spend most of their ' +
      'time counting its transfers per status and, on its page, summing a day of its deliveries (100,000 ' +
      'history rows here); both are index scans whose cost follows that destination, not the table.\n\n' +
      table,
  );
} finally {
  await sql.end();
  await handle.close();
  await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.end();
}
process.exit(0);
