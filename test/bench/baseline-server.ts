import https from 'node:https';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import postgres from 'postgres';

/**
 * The baselines, on the same Node HTTPS server setup as the service: a bare JSON route, one
 * raw postgres.js INSERT and one raw SELECT. Args: <port> <cert.pem> <key.pem> <database url>.
 */
const [port, cert, key, url] = process.argv.slice(2) as [string, string, string, string];
const fs = await import('node:fs');
const sql = postgres(url, { max: 10, onnotice: () => undefined });
await sql`create table if not exists bench_rows (id bigserial primary key, name text not null, at timestamptz not null default now())`;
await sql`insert into bench_rows (name) select 'row ' || i from generate_series(1, 1000) i`;

const app = new Hono();
app.get('/bare', (c) => c.json({ status: 'ok', value: 'bare' }));
// A body as large as destination/list of 10,000 destinations, encoded once: the cost of sending it.
const entry = (i: number) => ({ name: `BENCH_${String(i).padStart(6, '0')}`, type: i % 3, country: 'gb', countryIso: 'gb', active: true, statusCode: 'INIT', backup: false, comment: `benchmark destination ${i}`, monitor: false, acquisition: false, userMail: `ops${i}@example.org`, filterName: null });
const staticList = new Uint8Array(Buffer.from(JSON.stringify({ status: 'ok', destinationList: Array.from({ length: 10_000 }, (_, i) => entry(i + 1)) })));
app.get('/static-list', (c) => c.body(staticList, 200, { 'content-type': 'application/json' }));
app.get('/insert', async (c) => {
  const [row] = await sql`insert into bench_rows (name) values (${c.req.query('n') ?? 'x'}) returning id`;
  return c.json({ status: 'ok', id: Number(row!.id) });
});
app.get('/select', async (c) => {
  const [row] = await sql`select id, name from bench_rows where id = ${1 + Math.floor(Math.random() * 1000)}`;
  return c.json({ status: 'ok', row });
});

serve({ fetch: app.fetch, port: Number(port), hostname: '127.0.0.1', createServer: https.createServer, serverOptions: { cert: fs.readFileSync(cert), key: fs.readFileSync(key) } }, () =>
  process.stdout.write('ready\n'),
);
process.on('SIGTERM', () => sql.end().then(() => process.exit(0)));
