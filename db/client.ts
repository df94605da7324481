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
}

export interface PostgresOptions {
  max?: number;
  /** Workers: one short-lived connection per request, no type fetching, no prepared statements. */
  perRequest?: boolean;
}

export function openPostgres(url: string, options: PostgresOptions = {}): DbHandle {
  const client = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => undefined,
    ...(options.perRequest && { max: 1, fetch_types: false, prepare: false }),
  });
  const db = drizzle(client, { schema }) as unknown as Database;
  return { db, kind: 'postgres', close: () => client.end({ timeout: 5 }) };
}
