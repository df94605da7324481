/**
 * Bookkeeping alone: four mover processes on Postgres deliver through the `test` method (the
 * source read, nothing sent), so that what is measured is the claims, the ends and the looks.
 * Transfers are registered by SQL beforehand, spread over destinations of 8 connections each.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { openPostgres } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { startRoundTripCounter } from './pg-round-trips.ts';
import { postgresCpu, sleep, spawnMover, stopped } from './support.ts';

export interface TestMethodFigures {
  movers: number;
  transfers: number;
  destinations: number;
  perSecond: number;
  roundTripsPerTransfer: number;
  postgresUsPerTransfer: number;
}

export async function testMethodThroughput(
  admin: postgres.Sql,
  pg: URL,
  scale = { movers: 4, transfers: 20_000, destinations: 32 },
): Promise<TestMethodFigures> {
  const database = `ecpds_bench_test_method_${process.pid}`;
  await admin.unsafe(`drop database if exists ${database} with (force)`);
  await admin.unsafe(`create database ${database}`);
  // Every statement's duration in the server's log, to see where Postgres spends its time.
  if (process.env.BENCH_LOG_STATEMENTS)
    await admin.unsafe(`alter database ${database} set log_min_duration_statement = 0`);
  const url = new URL(pg);
  url.pathname = `/${database}`;
  const handle = openPostgres(url.href, { max: 2 });
  const sql = postgres(url.href, { max: 1, onnotice: () => undefined });
  const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-test-method-')));
  const source = path.join(work, 'product.bin');
  fs.writeFileSync(source, Buffer.alloc(4096, 7));
  const counter = await startRoundTripCounter({ host: pg.hostname, port: Number(pg.port || 5432) });
  const movers: ChildProcess[] = [];
  try {
    await migrate(handle);
    await sql.unsafe(`
      insert into ectrans_modules (name, active) values ('test', true) on conflict do nothing;
      insert into transfer_methods (name, ectrans_module_name, active) values ('test', 'test', true)
        on conflict do nothing;
      insert into destinations (name, country_iso, type, status_code, max_connections)
      select 'TM_' || g, 'gb', 1, 'INIT', 8 from generate_series(1, ${scale.destinations}) g;
      insert into hosts (hostid, nickname, type, active, transfer_method_name, host, dir, max_connections, data)
      select g, 'tm-' || g, 'Dissemination', true, 'test', '', '', -1, ''
      from generate_series(1, ${scale.destinations}) g;
      insert into destination_hosts (destination, hostid, priority)
      select 'TM_' || g, g, 0 from generate_series(1, ${scale.destinations}) g;
      insert into data_files (id, source, size, registered_by)
      select g, '${source}', 4096, 'bench' from generate_series(1, ${scale.transfers}) g;
      insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at, queue_at)
      select g, 'TM_' || (1 + g % ${scale.destinations}), 'f' || g, 99, 'WAIT', now(), now() + interval '1 day', now()
      from generate_series(1, ${scale.transfers}) g;
      analyze;`);
    const counted = new URL(url);
    counted.port = String(counter.port);
    for (let i = 1; i <= scale.movers; i++)
      movers.push(spawnMover(counted.href, `tm${i}`, { concurrency: 16, sourceRoots: work, work }));
    await sleep(2000);
    const trips = counter.roundTrips();
    const cpu = postgresCpu(database);
    const started = performance.now();
    await sql.unsafe(`update destinations set status_code = 'WAIT' where name like 'TM\\_%'`);
    await sql.unsafe(`notify ecpds_movers`).catch(() => undefined);
    for (;;) {
      const [row] = await sql<[{ n: number }]>`select count(*)::int as n from data_transfers where status = 'DONE'`;
      if (row.n >= scale.transfers) break;
      if (performance.now() - started > 600_000) throw new Error(`test method: ${row.n} of ${scale.transfers} DONE`);
      await sleep(50);
    }
    const seconds = (performance.now() - started) / 1000;
    return {
      ...scale,
      perSecond: Math.round(scale.transfers / seconds),
      roundTripsPerTransfer: (counter.roundTrips() - trips) / scale.transfers,
      postgresUsPerTransfer: (postgresCpu(database) - cpu) / scale.transfers,
    };
  } finally {
    await Promise.all(movers.map(stopped));
    await counter.stop();
    await sql.end();
    await handle.close();
    await admin.unsafe(`drop database if exists ${database} with (force)`);
    fs.rmSync(work, { recursive: true, force: true });
  }
}
