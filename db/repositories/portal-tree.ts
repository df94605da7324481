import { type SQL, sql } from 'drizzle-orm';
import type { PortalEntry, PortalFile, PortalRepo } from '../../core/portal/ports.ts';
import { byteOrder } from '../../core/portal/tree.ts';
import { type Database, rowsOf } from '../client.ts';
import { executePrepared } from '../prepared.ts';
import { folderCounts, folderTimes } from './portal-folders.ts';
import { heldShownTo, shownAt } from './portal-shown.ts';

type FileRow = {
  id: string | number;
  data_file_id: string | number;
  target: string;
  status: string;
  source: string;
  size: string | number;
  checksum: string | null;
  object_key: string | null;
  stored_md5: string | null;
  stored_sha512: string | null;
  created_at: string | Date;
  scheduled_at: string | Date;
  expires_at: string | Date;
  destination_type?: string | null;
};

const toFile = (r: FileRow): PortalFile => ({
  transferId: Number(r.id),
  dataFileId: Number(r.data_file_id),
  path: r.target,
  source: r.source,
  size: Number(r.size),
  checksum: r.checksum,
  objectKey: r.object_key,
  stored: r.stored_md5 !== null && r.stored_sha512 !== null ? { md5: r.stored_md5, sha512: r.stored_sha512 } : null,
  modifiedAt: new Date(r.created_at),
  status: r.status,
  scheduledAt: new Date(r.scheduled_at),
  expiresAt: new Date(r.expires_at),
  destinationType: r.destination_type ?? null,
});

const FILE_COLUMNS = sql.raw(
  't.id, t.data_file_id, t.target, t.status, f.source, f.size, f.checksum, f.object_key, ' +
    's.md5 as stored_md5, s.sha512 as stored_sha512, f.created_at, t.scheduled_at, t.expires_at',
);
/** A transfer's data file, and the sums of its stored copy once retrieved (by its primary key). */
const FILES = sql.raw(
  'data_transfers t join data_files f on f.id = t.data_file_id left join stored_objects s on s.key = f.object_key',
);
const TARGET = sql`t.target collate "C"`;
// `nulls last` as in the index (data_transfers_portal): a plain `desc` means nulls first, and
// Postgres then sorts the destination's rows rather than read them in the index's order.
const NEWEST_FIRST = sql`order by ${TARGET}, t.id desc nulls last`;

type PathRange = { lower: string | null; inclusive: boolean; upper: string | null };
const lowerBound = (range: PathRange) =>
  range.lower === null
    ? sql``
    : range.inclusive
      ? sql`and ${TARGET} >= ${range.lower}`
      : sql`and ${TARGET} > ${range.lower}`;
const upperBound = (range: PathRange) => (range.upper === null ? sql`` : sql`and ${TARGET} < ${range.upper}`);

/**
 * The newest transfer shown (shownAt) of each path of a destination in a range of paths (byte
 * order), as the portal's tree shows them to `viewer`.
 */
function availableFiles(
  destination: string,
  at: { now: Date; viewer: string | null },
  range: PathRange & { exact?: string },
  limit: number,
) {
  // The type's label only for one file (its INH line), not for every row of a listing.
  const typeLabel =
    range.exact === undefined
      ? sql``
      : sql`, (select dt.label from destinations d join destination_types dt on dt.id = d.type
          where d.name = t.destination) as destination_type`;
  const exact = range.exact === undefined ? sql`` : sql`and ${TARGET} = ${range.exact}`;
  return sql`
    select distinct on (${TARGET}) ${FILE_COLUMNS} ${typeLabel}
    from ${FILES}
    where t.destination = ${destination} ${lowerBound(range)} ${upperBound(range)} ${exact}
      and ${shownAt(at.now, at.viewer)}
    ${NEWEST_FIRST}
    limit ${limit}`;
}

/**
 * The entries of the directory `prefix` in a range, one row each: each step seeks the newest
 * available transfer of the first path past the previous entry, past all the paths of a
 * directory at once (its bound, as pastDirectory). Where most paths lie in subdirectories, this
 * reads one row per entry, where the batches of availableFiles read every path below them.
 */
function directoryWalk(
  destination: string,
  prefix: string,
  at: { now: Date; viewer: string | null },
  range: PathRange,
  limit: number,
) {
  const rest = sql`substr(t.target, length(${prefix}::text) + 1)`;
  const step = (from: SQL) => sql`
    select ${FILE_COLUMNS}, case when strpos(${rest}, '/') > 0
        then ${prefix}::text || split_part(${rest}, '/', 1) || '0' else t.target end as bound
    from ${FILES}
    where t.destination = ${destination} ${from} ${upperBound(range)} and ${shownAt(at.now, at.viewer)}
    ${NEWEST_FIRST}
    limit 1`;
  return sql`
    with recursive walk as (
      (${step(lowerBound(range))})
      union all
      select n.* from walk cross join lateral (${step(sql`and ${TARGET} >= walk.bound and t.target <> walk.target`)}) n
    )
    select * from walk limit ${limit}`;
}

/** The first path after every path below `prefix + name + '/'`, in byte order. */
const pastDirectory = (prefix: string, name: string) => `${prefix}${name}0`;
/** The first path after every path starting with `prefix` (which ends with '/'). */
const pastPrefix = (prefix: string) => (prefix === '' ? null : `${prefix.slice(0, -1)}0`);
const UNREACHABLE_NAMES = new Set(['', '.', '..']);

/** The portal's tree: a destination's available files by path, a page of a directory at a time. */
/**
 * The first string after every string starting with `prefix`, in byte order (UTF-8 keeps the order
 * of code points): its last code point one higher; null when there is none.
 */
function pastAnyPrefix(prefix: string): string | null {
  const points = [...prefix];
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    // Past the surrogates, which no string of UTF-8 holds.
    const next = last === 0xd7ff ? 0xe000 : last + 1;
    if (next <= 0x10ffff) return points.join('') + String.fromCodePoint(next);
  }
  return null;
}

export const portalTree = (
  db: Database,
): Pick<
  PortalRepo,
  'list' | 'file' | 'version' | 'registered' | 'files' | 'recordChecksum' | 'folderTimes' | 'folderCounts'
> => ({
  async files(destination, prefix, now, page, viewer = null) {
    const lower =
      page.after !== null && byteOrder(page.after, prefix) >= 0
        ? { lower: page.after, inclusive: false }
        : { lower: prefix === '' ? null : prefix, inclusive: true };
    const range = { ...lower, upper: pastAnyPrefix(prefix) };
    const rows = rowsOf<FileRow>(
      await executePrepared(db, availableFiles(destination, { now, viewer }, range, page.limit), 'portalFiles'),
    );
    return rows.filter((r) => r.target.startsWith(prefix)).map(toFile);
  },
  async list(destination, prefix, now, page, viewer = null) {
    const entries: PortalEntry[] = [];
    const upper = pastPrefix(prefix);
    let lower = page.after === null ? (prefix === '' ? null : prefix) : `${prefix}${page.after}`;
    // A directory cursor is passed with its '/': the page goes on after every path below it.
    let inclusive = page.after === null;
    if (page.after?.endsWith('/')) [lower, inclusive] = [pastDirectory(prefix, page.after.slice(0, -1)), true];
    // Each batch goes on from the last path seen; a directory's further paths are skipped by the
    // next batch's lower bound. Once a batch has skipped paths below a directory, the rest of the
    // page is walked entry by entry (directoryWalk), reading no path it would skip.
    let walking = false;
    while (entries.length < page.limit) {
      const batch = Math.max(page.limit - entries.length, 16) + 1;
      const range = { lower, inclusive, upper };
      const rows = rowsOf<FileRow>(
        walking
          ? await executePrepared(db, directoryWalk(destination, prefix, { now, viewer }, range, batch), 'portalWalk')
          : await executePrepared(db, availableFiles(destination, { now, viewer }, range, batch), 'portalList'),
      );
      let skipping: string | null = null;
      for (const row of rows) {
        if (skipping !== null && row.target.startsWith(skipping)) {
          walking = true;
          continue;
        }
        skipping = null;
        const rest = row.target.slice(prefix.length);
        const slash = rest.indexOf('/');
        const name = slash < 0 ? rest : rest.slice(0, slash);
        [lower, inclusive] = [row.target, false];
        if (UNREACHABLE_NAMES.has(name)) continue;
        if (slash < 0) entries.push({ type: 'file', name, file: toFile(row) });
        else {
          entries.push({ type: 'directory', name });
          skipping = `${prefix}${name}/`;
          [lower, inclusive] = [pastDirectory(prefix, name), true];
        }
        if (entries.length === page.limit) break;
      }
      if (rows.length < batch) break;
    }
    if (page.times) {
      // A directory's time is its newest file's: one statement for the page's directories.
      const directories = entries.filter((e) => e.type === 'directory');
      const times = await folderTimes(
        db,
        directories.map((d) => ({ destination, path: `${prefix}${d.name}` })),
        now,
        viewer,
      );
      directories.forEach((d, i) => {
        d.modifiedAt = times[i] ?? null;
      });
    }
    return entries;
  },
  folderTimes: (folders, now, viewer = null) => folderTimes(db, folders, now, viewer),
  folderCounts: (folders, now, viewer, cap) => folderCounts(db, folders, now, viewer, cap),
  async file(destination, path, now, viewer = null) {
    const rows = rowsOf<FileRow>(
      await executePrepared(
        db,
        availableFiles(destination, { now, viewer }, { lower: null, inclusive: true, upper: null, exact: path }, 1),
        'portalFile',
      ),
    );
    return rows[0] ? toFile(rows[0]) : null;
  },
  async version(destination, path, objectKey, now, viewer = null) {
    // Not only the newest transfer's: an update makes the path's transfer wait for its new copy, while
    // the version announced before stays served. Its row goes with the object (core/retention/objects.ts).
    // A held transfer hides its current bytes only (heldShownTo): a version released before stays served.
    const at = now.toISOString();
    const rows = rowsOf<FileRow>(
      await db.execute(sql`
        select t.id, t.data_file_id, t.target, t.status, f.source, s.size, s.md5 as checksum,
          s.key as object_key, s.md5 as stored_md5, s.sha512 as stored_sha512, f.created_at, t.scheduled_at,
          t.expires_at
        from stored_objects s join data_files f on f.id = s.data_file_id
          join data_transfers t on t.data_file_id = f.id
        where s.key = ${objectKey} and t.destination = ${destination} and ${TARGET} = ${path}
          and t.status <> 'INIT' and t.scheduled_at <= ${at}::timestamptz and t.expires_at > ${at}::timestamptz
          and f.deleted_at is null
          and (${heldShownTo(viewer)} or f.object_key is distinct from s.key)
        order by t.id desc
        limit 1`),
    );
    return rows[0] ? toFile(rows[0]) : null;
  },
  async recordChecksum(dataFileId, md5) {
    await db.execute(sql`update data_files set checksum = ${md5} where id = ${dataFileId} and checksum is null`);
  },
  async registered(destination, dataFileId) {
    const rows = rowsOf<FileRow>(
      await db.execute(sql`
        select ${FILE_COLUMNS}, (select dt.label from destinations d join destination_types dt on dt.id = d.type
            where d.name = t.destination) as destination_type
        from ${FILES}
        where t.destination = ${destination} and t.data_file_id = ${dataFileId} and t.status not in ('STOP', 'FAIL')
        order by t.id desc
        limit 1`),
    );
    return rows[0] ? toFile(rows[0]) : null;
  },
});
