import { randomFillSync } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type postgres from 'postgres';
import { openPostgres } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { addBenchClient, auth, sleep } from './support.ts';

/** The portal bench's user, its destinations and files: what bench/portal.ts downloads and lists. */

export const USER = 'benchuser';
export const PASSWORD = 'Bench-Portal-1';
export const userAuth = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
/** Downloads: the 1 GiB file and the 10 MiB ones, registered through datafile/put. */
export const FILES = 'FILES';
/** 100,000 files at the top of the destination. */
export const FLAT = 'FLAT';
/** 100,000 files in 901 directories: 900 of 100 files, and `many/` of 10,000. */
export const TREE = 'TREE';
export const LISTED = 100_000;
export const BIG = 'big.bin';
/** The files downloaded many at once: `small/` of 10 MiB, `tiny/` of 1 KiB (the request's own cost). */
export const manyName = (dir: 'small' | 'tiny', i: number) => `${dir}/f${String(i).padStart(3, '0')}.bin`;

/** Migrates a fresh database and adds the `bench` API client with every permission. */
export async function prepareDatabase(url: string) {
  const handle = openPostgres(url, { max: 2 });
  await migrate(handle);
  await addBenchClient(handle);
  await handle.close();
}

/** Random bytes written in 16 MiB pieces and synced, so that no writeback runs while anything is timed. */
export function writeFile(file: string, bytes: number) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const chunk = randomFillSync(Buffer.alloc(Math.min(bytes, 16 * 1024 * 1024)));
  const fd = fs.openSync(file, 'w', 0o644);
  for (let at = 0; at < bytes; at += chunk.byteLength)
    fs.writeSync(fd, chunk, 0, Math.min(chunk.byteLength, bytes - at));
  fs.fsyncSync(fd);
  fs.closeSync(fd);
}

async function api(base: string, method: string, route: string) {
  const r = await fetch(`${base}${route}`, { method, headers: { authorization: auth } });
  if (r.status !== 200) throw new Error(`${method} ${route}: ${r.status} ${await r.text()}`);
}

/**
 * The scene as an operator makes it, through the running service's API: the destinations (stored
 * directly, as the API creates none), the incoming user with the API's default permissions (dir,
 * get, mtime, size) associated with them, and the files to download (`targets` of FILES) put from
 * the source root and retrieved into the store. The user may run as many downloads at once as the bench does.
 */
export async function setUpScene(sql: postgres.Sql, base: string, sources: string, targets: readonly string[]) {
  for (const name of [FILES, FLAT, TREE]) {
    await sql`insert into destinations (name, country_iso, type) values (${name}, 'gb', 1)`;
  }
  const user = new URLSearchParams({ id: USER, email: `${USER}@example.org`, iso: 'gb', active: 'true' });
  user.set('pass', PASSWORD);
  await api(base, 'POST', `/v1/incoming/user/add?${user}`);
  for (const destination of [FILES, FLAT, TREE]) {
    await api(base, 'POST', `/v1/incoming/association/add?id=${USER}&destination=${destination}`);
  }
  await sql`insert into portal_options (user_id, name, value) values (${USER}, 'portal.maxConnections', '1000')`;
  for (const target of targets) {
    const query = new URLSearchParams({ destination: FILES, source: path.join(sources, FILES, target), target });
    await api(base, 'GET', `/v1/datafile/put?${query}`);
  }
  await untilRetrieved(sql);
}

/**
 * The portal serves stored copies only: the scene is ready once the service's retriever (its embedded
 * mover, ECPDS_MOVER=1) has stored every file put.
 */
async function untilRetrieved(sql: postgres.Sql) {
  const started = Date.now();
  for (;;) {
    const [row] = await sql<Array<{ left: number }>>`
      select count(*)::int as left from data_files where object_key is null and deleted_at is null`;
    if (row!.left === 0) return;
    if (Date.now() - started > RETRIEVAL_WAIT_MS) throw new Error(`${row!.left} files put were never retrieved`);
    await sleep(200);
  }
}

const RETRIEVAL_WAIT_MS = 10 * 60 * 1000;

/**
 * The listed destinations' 100,000 files each, inserted as delivered (DONE) transfers of data
 * files whose bytes are never read: a listing reads only the database.
 */
export async function insertListedFiles(sql: postgres.Sql) {
  const pad = (n: string, width: number) => `lpad((${n})::text, ${width}, '0')`;
  const flat = `'${FLAT}/f' || ${pad('g', 6)} || '.bin'`;
  const tree =
    `case when g < 90000 then '${TREE}/d' || ${pad('g / 100', 3)} || '/f' || ${pad('g % 100', 2)} || '.bin' ` +
    `else '${TREE}/many/f' || ${pad('g - 90000', 5)} || '.bin' end`;
  for (const name of [flat, tree]) {
    await sql.unsafe(
      `insert into data_files (source, size, registered_by)
       select ${name}, 1000 + g, 'bench-listing' from generate_series(0, ${LISTED - 1}) g`,
    );
  }
  await sql.unsafe(
    `insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at)
     select id, split_part(source, '/', 1), substr(source, strpos(source, '/') + 1), 99, 'DONE',
       now() - interval '1 hour', now() + interval '30 days'
     from data_files where registered_by = 'bench-listing'`,
  );
  await sql.unsafe('vacuum analyze');
}
