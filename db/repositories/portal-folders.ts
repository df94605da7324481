import { sql } from 'drizzle-orm';
import { type Database, rowsOf } from '../client.ts';
import { executePrepared, literalLimit } from '../prepared.ts';
import { shownAt } from './portal-shown.ts';

/**
 * A target's directory ('' at the top of its destination), as the index data_transfers_portal_folder
 * keys it: the same expression, so that Postgres reads that index.
 */
const PARENT = sql.raw(`regexp_replace(t.target, '/?[^/]*$', '') collate "C"`);
/** After every directory's path: the upper bound of a destination's own directory. */
const PAST_ALL = '\u{10FFFF}';

/**
 * The times of directories of the tree (a destination's own is path ''): each one's newest file
 * shown to `viewer`, at any depth below it. A destination's own directory without one takes the
 * destination's creation; any other is null (it is not in the tree).
 *
 * Read without visiting every file: the index (data_transfers_portal_folder) holds each transfer
 * under its directory, newest file first (by its data file's id, which follows registration), so
 * the statement seeks from one directory below the folder to the next (one index descent each)
 * and reads the first file shown in each. Its cost grows with the number of directories below the
 * folder that hold files, not with the number of files. (`nulls last` as in the index: a plain
 * `desc` is another order to Postgres, which would then sort.)
 */
export async function folderTimes(
  db: Database,
  folders: ReadonlyArray<{ destination: string; path: string }>,
  now: Date,
  viewer: string | null,
): Promise<Array<Date | null>> {
  if (folders.length === 0) return [];
  const given = JSON.stringify(folders.map((f) => [f.destination, f.path]));
  const rows = rowsOf<{ i: number; newest: string | Date | null }>(
    await executePrepared(
      db,
      sql`
      with recursive folders as (
        select (f.n - 1)::int as i, f.v->>0 as destination, f.v->>1 as dir
        from jsonb_array_elements(${given}::jsonb) with ordinality as f(v, n)
      ), parents(i, destination, parent, last, upper) as (
        select i, destination, dir collate "C",
          (case when dir = '' then '' else dir || '/' end) collate "C",
          (case when dir = '' then ${PAST_ALL} else dir || '0' end) collate "C"
        from folders
        union all
        select p.i, p.destination, n.parent, n.parent, p.upper
        from parents p cross join lateral (
          select ${PARENT} as parent from data_transfers t
          where t.destination = p.destination and t.status not in ('INIT', 'SCHE', 'FETC')
            and ${PARENT} > p.last and ${PARENT} < p.upper
          order by 1
          limit 1) n
      ), newest as (
        select p.i, max(n.created_at) as at
        from parents p cross join lateral (
          select f.created_at from data_transfers t join data_files f on f.id = t.data_file_id
          where t.destination = p.destination and ${PARENT} = p.parent and ${shownAt(now, viewer)}
          order by t.data_file_id desc nulls last
          limit 1) n
        group by p.i
      )
      select fo.i, coalesce(nw.at, case when fo.dir = '' then d.created_at end) as newest
      from folders fo left join newest nw on nw.i = fo.i left join destinations d on d.name = fo.destination`,
      'portalFolderTimes',
    ),
  );
  const times: Array<Date | null> = folders.map(() => null);
  for (const row of rows) times[row.i] = row.newest === null ? null : new Date(row.newest);
  return times;
}

/**
 * How many files of each directory (a destination's own is path '') `viewer` is shown, at any depth
 * below it: its distinct paths, as the listing shows one file per path (the newest). Counted up to
 * `cap + 1`, a count above `cap` meaning more than `cap`. In the order given.
 *
 * Read without visiting every file of a large directory: each directory's paths are one range of
 * the index data_transfers_portal (destination, then target in byte order), read in its order, one
 * row per path kept (`distinct on`, over rows in index order), and the read stops at `cap + 1`
 * paths. Its cost grows with the cap (and the transfers read on the way: a path's older ones, and
 * those not shown), not with the directory's files.
 */
export async function folderCounts(
  db: Database,
  folders: ReadonlyArray<{ destination: string; path: string }>,
  now: Date,
  viewer: string | null,
  cap: number,
): Promise<number[]> {
  if (folders.length === 0) return [];
  const given = JSON.stringify(folders.map((f) => [f.destination, f.path]));
  const rows = rowsOf<{ i: number; files: number | string }>(
    await executePrepared(
      db,
      sql`
      with folders as (
        select (f.n - 1)::int as i, f.v->>0 as destination,
          (case when f.v->>1 = '' then '' else (f.v->>1) || '/' end) collate "C" as lower,
          (case when f.v->>1 = '' then ${PAST_ALL} else (f.v->>1) || '0' end) collate "C" as upper
        from jsonb_array_elements(${given}::jsonb) with ordinality as f(v, n)
      )
      select fo.i, c.files
      from folders fo cross join lateral (
        select count(*)::int as files from (
          select distinct on (t.target collate "C") t.target
          from data_transfers t join data_files f on f.id = t.data_file_id
          where t.destination = fo.destination
            and t.target collate "C" >= fo.lower and t.target collate "C" < fo.upper
            and ${shownAt(now, viewer)}
          order by t.target collate "C"
          limit ${literalLimit(cap + 1)}) paths) c`,
      'portalFolderCounts',
    ),
  );
  const counts = folders.map(() => 0);
  for (const row of rows) counts[row.i] = Number(row.files);
  return counts;
}
