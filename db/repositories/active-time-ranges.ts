import { sql } from 'drizzle-orm';
import { insideActiveTimeRange } from '../../core/data-files/active-time-range.ts';
import { readOptions } from '../../core/hosts/options.ts';
import { type Database, rowsOf } from '../client.ts';
import { executePrepared } from '../prepared.ts';

/**
 * The started destinations whose `scheduler.activeTimeRange` is closed at `now`, as JSON text (a
 * list of names) for the due look to leave out. Only destinations that mention the option are read.
 */
export async function closedByTimeRange(db: Database, now: Date): Promise<string> {
  const rows = rowsOf<{ name: string; data: string }>(
    await executePrepared(
      db,
      sql`select name, data from destinations
        where active and status_code in ('WAIT', 'EXEC') and strpos(data, 'scheduler.activeTimeRange') > 0`,
      'closedByTimeRange',
    ),
  );
  const closed = rows
    .filter((r) => !insideActiveTimeRange(readOptions(r.data).get('scheduler.activeTimeRange'), now))
    .map((r) => r.name);
  return JSON.stringify(closed);
}
