import { sql } from 'drizzle-orm';
import { type Database, rowsOf } from './client.ts';

/**
 * The database's clock now: clock_timestamp(), not now(), which stays at the start of the
 * transaction. As milliseconds in a float8, which both drivers give back as a number.
 */
export async function readDatabaseClock(db: Database): Promise<Date> {
  const rows = await db.execute(sql`select extract(epoch from clock_timestamp())::float8 * 1000 as ms`);
  const [row] = rowsOf<{ ms: number | string }>(rows);
  if (!row) throw new Error('the database did not tell its time');
  return new Date(Number(row.ms));
}
