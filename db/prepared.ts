import { type SQL, sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { Database } from './client.ts';

/**
 * Statements of the requests that BENCHMARKS.md measures run prepared ("Prepared statements"
 * there has the figures). Unprepared, a statement with parameters costs Postgres a describe
 * round trip and a parse and plan on every run; prepared, postgres.js parses it once per
 * connection, keyed by its text, and each later run is one round trip. drizzle prepares a query
 * only when it is given a name; the name is not sent. PGlite runs it as before, and the Workers'
 * per-request client, whose connection never prepares (Hyperdrive), too.
 */
export const runPrepared = <T>(query: { prepare(name: string): { execute(): Promise<T> } }, name: string) =>
  query.prepare(name).execute();

const dialect = new PgDialect();

/** `db.execute(sql)`, prepared: the rows as the driver gives them (read them with rowsOf). */
export const executePrepared = (db: Database, query: SQL, name: string): Promise<unknown> =>
  db._.session.prepareQuery(dialect.sqlToQuery(query), undefined, name, false).execute();

/**
 * A LIMIT written into a statement's text. As a parameter, Postgres estimates a tenth of the rows for it,
 * finds the generic plan dearer than one made for each run's values, and plans every run anew; written in,
 * each distinct limit is a statement prepared, and planned, once per connection.
 */
export function literalLimit(limit: number) {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`Invalid limit ${limit}`);
  return sql.raw(String(limit));
}
