import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import * as schema from './schema.ts';

export type Schema = typeof schema;
/** What repositories run on: the database or a transaction of it, PGlite and Postgres alike. */
export type Database = PgDatabase<PgQueryResultHKT, Schema>;

export interface DbHandle {
  db: Database;
  kind: 'pglite' | 'postgres';
  close(): Promise<void>;
  /** For the migrator only; repositories never see it. */
  raw: unknown;
}

/** PGlite in `dataDir`, or in memory when none is given. */
export async function openPglite(dataDir?: string): Promise<DbHandle> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  const client = dataDir ? await PGlite.create(dataDir) : await PGlite.create();
  const db = drizzle(client, { schema }) as unknown as Database;
  return { db, kind: 'pglite', raw: client, close: () => client.close() };
}

export interface PostgresOptions {
  max?: number;
  /** Workers: one short-lived connection per request. */
  perRequest?: boolean;
}

export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<DbHandle> {
  const { default: postgres } = await import('postgres');
  const { drizzle } = await import('drizzle-orm/postgres-js');
  const client = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => undefined,
    ...(options.perRequest && { max: 1, fetch_types: false, prepare: false }),
  });
  const db = drizzle(client, { schema }) as unknown as Database;
  return { db, kind: 'postgres', raw: client, close: () => client.end({ timeout: 5 }) };
}
