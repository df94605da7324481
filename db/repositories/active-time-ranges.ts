import { type SQL, sql } from 'drizzle-orm';
import { insideActiveTimeRange } from '../../core/data-files/active-time-range.ts';
import { readOptions } from '../../core/hosts/options.ts';
import { type Database, jsonColumn, rowsOf } from '../client.ts';
import { executePrepared } from '../prepared.ts';

const MENTIONS_RANGE = sql`active and status_code in ('WAIT', 'EXEC') and strpos(data, 'scheduler.activeTimeRange') > 0`;

/**
 * The version of the options of the started destinations that mention `scheduler.activeTimeRange`,
 * as one SQL value: the due look returns it, so that options changed since they were read are seen
 * in the same round trip.
 */
export const timeRangesVersion: SQL = sql`(select md5(coalesce(string_agg(name || ':' || data, E'\\n' order by name), ''))
  from destinations where ${MENTIONS_RANGE})`;

/**
 * The started destinations whose `scheduler.activeTimeRange` is closed, judged here (core's rule) on
 * their options as last read. The options are read once, then again only when the due look finds
 * their version changed: most destinations never mention the option, and a look is one statement.
 */
export function activeTimeRanges(db: Database) {
  let known: { version: string; ranges: { name: string; range: string | undefined }[] } | null = null;
  return {
    /** The version of the options read, null before the first read. */
    version: () => known?.version ?? null,
    /** The names closed at `now`, as JSON text (a list) for the due look to leave out. */
    closedAt(now: Date): string {
      const closed = (known?.ranges ?? []).filter((r) => !insideActiveTimeRange(r.range, now)).map((r) => r.name);
      return JSON.stringify(closed);
    },
    async read(): Promise<void> {
      const [row] = rowsOf<{ version: string; ranges: unknown }>(
        await executePrepared(
          db,
          sql`select ${timeRangesVersion} as version, coalesce((select json_agg(json_build_object('name', name,
            'data', data) order by name) from destinations where ${MENTIONS_RANGE}), '[]') as ranges`,
          'activeTimeRanges',
        ),
      );
      known = {
        version: row!.version,
        ranges: jsonColumn<{ name: string; data: string }[]>(row!.ranges).map((r) => ({
          name: r.name,
          range: readOptions(r.data).get('scheduler.activeTimeRange'),
        })),
      };
    },
  };
}
