import { lstat } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { promisify } from 'node:util';
import { serve } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import postgres from 'postgres';
import { constantTimeEqualText, sha256Base64 } from '../core/common/crypto.ts';
import { batchedStdout, jsonLogger } from '../functions/node/logger.ts';

/**
 * The baselines, on the same Node HTTPS server setup as the service: a bare JSON route, one
 * raw postgres.js INSERT and one raw SELECT; and two floors, the least work the contract asks
 * of an authenticated type list and of a put, by hand. Args: <port> <cert.pem> <key.pem> <database url>.
 */
const [port, cert, key, url] = process.argv.slice(2) as [string, string, string, string];
const fs = await import('node:fs');
const sql = postgres(url, { max: 10, onnotice: () => undefined });
const benchColumns = sql.unsafe('id bigserial primary key, name text not null, at timestamptz not null default now()');
await sql`create table if not exists bench_rows (${benchColumns})`;
await sql`insert into bench_rows (name) select 'row ' || i from generate_series(1, 1000) i`;

const app = new Hono();
app.get('/bare', (c) => c.json({ status: 'ok', value: 'bare' }));
// A body as large as destination/list of 10,000 destinations, encoded once: the cost of sending it.
const entry = (i: number) => ({
  name: `BENCH_${String(i).padStart(6, '0')}`,
  type: i % 3,
  country: 'gb',
  countryIso: 'gb',
  active: true,
  statusCode: 'INIT',
  backup: false,
  comment: `benchmark destination ${i}`,
  monitor: false,
  acquisition: false,
  userMail: `ops${i}@example.org`,
  filterName: null,
});
const staticList = new Uint8Array(
  Buffer.from(
    JSON.stringify({ status: 'ok', destinationList: Array.from({ length: 10_000 }, (_, i) => entry(i + 1)) }),
  ),
);
app.get('/static-list', (c) => c.body(staticList, 200, { 'content-type': 'application/json' }));
app.get('/insert', async (c) => {
  const [row] = await sql`insert into bench_rows (name) values (${c.req.query('n') ?? 'x'}) returning id`;
  return c.json({ status: 'ok', id: Number(row!.id) });
});
app.get('/select', async (c) => {
  const [row] = await sql`select id, name from bench_rows where id = ${1 + Math.floor(Math.random() * 1000)}`;
  return c.json({ status: 'ok', row });
});

// The floors: the bench client's secret checked against its stored hash (SHA-256,
// compared in constant time), the permission expression matched, one access log line, and for
// the put the source's lstat (a plain file in a known directory) and the service's statement.
const [client] = await sql<
  { secret_hash: string; permissions: string[] }[]
>`select secret_hash, permissions from api_clients where username = 'bench'`;
const storedDigest = client!.secret_hash.slice('sha256$'.length);
const permission = new RegExp(`^(?:${client!.permissions[0]})$`, 'u');
const logger = jsonLogger(batchedStdout().write);
const lstatOf = promisify(lstat);

function authorized(c: Context, service: string | null): boolean {
  const token = /^basic +(\S+)\s*$/i.exec(c.req.header('authorization') ?? '')?.[1];
  const decoded = token ? Buffer.from(token, 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon <= 0) return false;
  return (
    constantTimeEqualText(sha256Base64(decoded.slice(colon + 1)), storedDigest) &&
    (service === null || permission.test(service))
  );
}

function answered(c: Context, started: number, status: number) {
  logger.info('request', {
    method: c.req.method,
    path: c.req.path,
    status,
    ms: Math.round((performance.now() - started) * 10) / 10,
    requestId: crypto.randomUUID(),
    client: 'bench',
  });
}

const typeList = JSON.stringify({
  status: 'ok',
  typeList: [{ 0: 'Acquisition' }, { 1: 'Dissemination' }, { 2: 'Time Critical' }],
});
app.get('/floor/type-list', (c) => {
  const started = performance.now();
  if (!authorized(c, null)) return c.json({ status: 'error', message: 'User not authorized' }, 500);
  answered(c, started, 200);
  return c.body(typeList, 200, {
    'content-type': 'application/json',
    'x-request-id': crypto.randomUUID(),
    'x-content-type-options': 'nosniff',
  });
});

// The columns the floor put fills, in the order of its select.
const transferColumns = sql.unsafe(
  'data_file_id, destination, target, unique_name, priority, status, standby, scheduled_at, expires_at, metadata',
);
app.get('/floor/put', async (c) => {
  const started = performance.now();
  if (!authorized(c, 'datafilePut')) return c.json({ status: 'error', message: 'User not authorized' }, 500);
  const { destination, source, uniquename } = c.req.query();
  const stat = await lstatOf(source!);
  if (!stat.isFile())
    return c.json({ status: 'error', message: `Source ${source} not allowed: not a regular file` }, 500);
  const now = Date.now();
  const target = path.basename(source!);
  const scheduled = new Date(now).toISOString();
  const expires = new Date(now + 2 * 86_400_000).toISOString();
  const [row] = await sql`
    with destination as (
      select name from destinations where name = ${destination!}
    ), transfer as (
      insert into data_transfers (${transferColumns})
      select nextval('data_files_id_seq'::regclass), name, ${target}, ${uniquename ?? ''}, 99, 'WAIT', false,
        ${scheduled}::timestamptz, ${expires}::timestamptz, '[]'::jsonb
      from destination
      on conflict (destination, target, unique_name) where status not in ('STOP', 'FAIL') do nothing
      returning data_file_id
    ), file as (
      insert into data_files (id, source, size, registered_by)
      select data_file_id, ${source!}, ${stat.size}, 'bench' from transfer
      returning id
    )
    select exists (select 1 from destination) as found, (select id from file) as id`;
  answered(c, started, 200);
  return c.json({ status: 'ok', id: Number(row!.id) }, 200, {
    'x-request-id': crypto.randomUUID(),
    'x-content-type-options': 'nosniff',
  });
});

serve(
  {
    fetch: app.fetch,
    port: Number(port),
    hostname: '127.0.0.1',
    createServer: https.createServer,
    serverOptions: { cert: fs.readFileSync(cert), key: fs.readFileSync(key) },
  },
  () => process.stdout.write('ready\n'),
);
process.on('SIGTERM', () => sql.end().then(() => process.exit(0)));
