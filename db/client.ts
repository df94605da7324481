import { sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from './schema.ts';

export type Schema = typeof schema;
/** What repositories run on: the database or a transaction of it, PGlite and Postgres alike. */
export type Database = PgDatabase<PgQueryResultHKT, Schema>;

export interface DbHandle {
  db: Database;
  kind: 'pglite' | 'postgres';
  close(): Promise<void>;
  /** Postgres notifications between processes (LISTEN/NOTIFY); none on the embedded database. */
  signals?: Signals;
}

export interface Signals {
  notify(channel: string): Promise<void>;
  /** Calls `onMessage` for every notification on `channel` from another handle, on a connection of its own. */
  listen(channel: string, onMessage: () => void): Promise<void>;
}

export interface PostgresOptions {
  max?: number;
  /** Workers: one short-lived connection per request, no type fetching, no prepared statements. */
  perRequest?: boolean;
  /**
   * How long Postgres lets a session of this process sit inside a transaction without a statement
   * before it ends the session. Transactions here never wait on the network between statements, so
   * one that sits is a process paused (stopped, frozen): ended, its locks no longer hold up the
   * other processes, e.g. a mover taking over the paused one's transfers once its lease lapsed.
   */
  idleInTransactionMs?: number;
}

/** The rows of `db.execute`: postgres.js answers an array of them, PGlite `{ rows }`. */
/**
 * Runs `work` in a transaction that first takes the advisory lock `key` (exclusive, held to the commit):
 * claims made under one key take turns across processes, each seeing what the ones before it took.
 */
export function inTurn<T>(db: Database, key: number, work: (tx: Database) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${key}::int, 0)`);
    return work(tx as unknown as Database);
  });
}

export const rowsOf = <T>(result: unknown): T[] => (Array.isArray(result) ? result : (result as { rows: T[] }).rows);

/** A json column as read: postgres.js may answer its text, PGlite the parsed value. */
export const jsonColumn = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;

const CONNECT_TIMEOUT_SECONDS = 10;
const MAX_RECONNECT_DELAY_SECONDS = 1;

/**
 * postgres.js as installed carries one patch (db/patches, applied by `npm ci`): a guard against a
 * write scheduled after its connection closed, which otherwise throws outside any request and ends
 * the process (porsager/postgres#1154, #1208). Nothing else of the driver is changed.
 */
export function openPostgres(url: string, options: PostgresOptions = {}): DbHandle {
  const client = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => undefined,
    // A database host that does not answer fails the request (503) in seconds, not after 30.
    connect_timeout: CONNECT_TIMEOUT_SECONDS,
    // After repeated failures postgres.js waits up to 20 s before it reconnects, and requests
    // queue behind that wait: capped, so that during an outage a request gets its 503 at once.
    backoff: (retries: number) => (0.5 + Math.random() / 2) * Math.min(3 ** retries / 100, MAX_RECONNECT_DELAY_SECONDS),
    // No JIT: every statement here is short, and right after a bulk change (a large monitoring
    // import, before statistics catch up) inflated estimates made Postgres compile the summary
    // query, which then took twice as long. Sent at connection start; not through a pooler.
    ...(!options.perRequest && {
      connection: {
        jit: 'off',
        ...(options.idleInTransactionMs && {
          idle_in_transaction_session_timeout: Math.round(options.idleInTransactionMs),
        }),
      },
    }),
    ...(options.perRequest && { max: 1, fetch_types: false, prepare: false }),
  });
  const db = drizzle(client, { schema }) as unknown as Database;
  // A handle signs its notifications and skips its own: its process has woken its listeners already,
  // and a wake for nothing costs the others' work a look at the queue.
  const signature = crypto.randomUUID();
  const signals: Signals = {
    notify: async (channel) => void (await client.notify(channel, signature)),
    listen: async (channel, onMessage) =>
      void (await client.listen(channel, (payload) => payload !== signature && onMessage())),
  };
  return { db, kind: 'postgres', close: () => client.end({ timeout: 5 }), signals };
}
