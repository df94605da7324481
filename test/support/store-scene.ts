import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { SecretBox } from '../../core/common/crypto.ts';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import type { Ports } from '../../core/ports.ts';
import { type DbHandle, rowsOf } from '../../db/client.ts';
import { backgroundWork, createPorts, createProcessState } from '../../functions/ports.ts';
import { destinationBackup, type TestHost } from './backups.ts';
import { basic, type ServerProcess } from './processes.ts';

/**
 * Servers started as processes on one Postgres database, with a store: the destinations are
 * restored through their API and started through the database (there is no API call for it), the
 * files put through the API, and what happened read in the database.
 */
export const SECRET_KEY = randomBytes(32).toString('base64');

const quiet = { info() {}, warn() {}, error() {} };

export function sceneOf(handle: DbHandle): Ports {
  return createPorts({
    db: handle.db,
    state: createProcessState(),
    secrets: new SecretBox(new Uint8Array(Buffer.from(SECRET_KEY, 'base64'))),
    logger: quiet,
    events: { write() {} },
    // Puts go through the servers, which check their own sources.
    sources: { probe: () => Promise.reject(new Error('no source here')) },
    waitUntil: backgroundWork(quiet).waitUntil,
  });
}

/** The bootstrap admin's Authorization header, from the first server's output. */
export function adminOf(server: ServerProcess): string {
  const secret = /Its secret is shown this once:\s+(\S+)/.exec(server.output())?.[1];
  if (!secret) throw new Error(`no bootstrap secret in:\n${server.output()}`);
  return basic('admin', secret);
}

export interface Answer {
  status: number;
  text: string;
  json: any;
}

/** One HTTPS request to a server process, with a JSON body when given. */
export function call(base: string, method: string, p: string, auth: string, body?: unknown): Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const r = https.request(
      new URL(p, base),
      {
        method,
        rejectUnauthorized: false,
        agent: false,
        headers: {
          authorization: auth,
          ...(payload && { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, text, json });
        });
      },
    );
    r.on('error', reject);
    r.end(payload);
  });
}

export async function addDestination(ports: Ports, base: string, auth: string, name: string, hosts: TestHost[]) {
  const r = await call(base, 'PUT', '/v1/destination/backup', auth, destinationBackup(name, hosts));
  if (r.status !== 200) throw new Error(`restore of ${name}: ${r.status} ${r.text}`);
  await setDestinationStatus(ports, 'test', name, 'start');
}

/** `datafile/put` through a server; the data file's id. */
export async function putThrough(base: string, auth: string, destination: string, source: string, target: string) {
  const q = new URLSearchParams({ destination, source, target });
  const r = await call(base, 'GET', `/v1/datafile/put?${q}`, auth);
  if (r.status !== 200) throw new Error(`put of ${target}: ${r.status} ${r.text}`);
  return r.json.id as number;
}

export interface TransferRow {
  id: number;
  status: string;
  data_file_id: number;
  target: string;
}

export async function transfersOf(handle: DbHandle, destination: string): Promise<TransferRow[]> {
  return rowsOf<TransferRow>(
    await handle.db.execute(sql`
      select id::int as id, status, data_file_id::int as data_file_id, target
      from data_transfers where destination = ${destination} order by id`),
  );
}

export async function historyOf(handle: DbHandle, transferId: number) {
  return rowsOf<{ status: string; comment: string | null }>(
    await handle.db.execute(sql`
      select status, comment from transfer_history where transfer_id = ${transferId} order by id`),
  );
}

/** Every file under a directory, relative to it, with its bytes. */
export function filesUnder(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile())
      out.set(path.relative(dir, path.join(e.parentPath, e.name)), fs.readFileSync(path.join(e.parentPath, e.name)));
  }
  return out;
}
