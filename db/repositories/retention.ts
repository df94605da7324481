import { type SQL, sql } from 'drizzle-orm';
import type { PurgedBatch, RetentionRepo } from '../../core/retention/ports.ts';
import { type Database, rowsOf } from '../client.ts';

type CountRow = { transfers: string | number; history: string | number; data_files: string | number };

const ENDED = sql.raw(`status in ('DONE', 'FAIL', 'STOP') and mover is null`);

/**
 * One statement, so one short transaction: the `doomed` transfers (locked, skipping those another
 * sweep or a writer holds) go with their history, then their data files unless a transfer left or
 * a WIS2 notification still to publish names them, and the totals grow by what went.
 * `doomed` must re-check the status after its lock: a transfer requeued meanwhile stays.
 */
function purge(db: Database, prefix: SQL, doomed: SQL, extra: { state: SQL; update: SQL; select: SQL }) {
  return db.execute(sql`
    with ${prefix} doomed as (${doomed}
    ), history as (
      delete from transfer_history where transfer_id in (select id from doomed) returning 1
    ), gone as (
      delete from data_transfers where id in (select id from doomed) returning id, data_file_id
    ), files as (
      delete from data_files f where f.id in (select data_file_id from gone)
        and not exists (select 1 from data_transfers x
          where x.data_file_id = f.id and x.id not in (select id from gone))
        and not exists (select 1 from wis2_outbox o where o.data_file_id = f.id and o.done_at is null)
      returning 1
    ), counts as (
      select (select count(*) from gone) as transfers, (select count(*) from history) as history,
        (select count(*) from files) as data_files
    ), state as (
      insert into retention_state as s (id, purged_transfers, purged_history, purged_data_files, identity_checked_id)
      select 1, transfers, history, data_files, ${extra.state} from counts
      on conflict (id) do update set purged_transfers = s.purged_transfers + excluded.purged_transfers,
        purged_history = s.purged_history + excluded.purged_history,
        purged_data_files = s.purged_data_files + excluded.purged_data_files${extra.update}
    )
    select transfers, history, data_files${extra.select} from counts`);
}

const batchOf = (row: CountRow | undefined): PurgedBatch => ({
  transfers: Number(row?.transfers ?? 0),
  history: Number(row?.history ?? 0),
  dataFiles: Number(row?.data_files ?? 0),
});

export const retentionRepo = (db: Database): RetentionRepo => ({
  async purgeAged(before, limit, now = new Date()) {
    // The retired index's own condition comes first, so that the walk reads ended transfers only.
    // A transfer the portal still shows and WIS2 announced stays until its expiry, whose sweep announces
    // its deletion (data-files.ts, noticeExpired): purged now, it would leave the portal untold.
    const rows = await purge(
      db,
      sql``,
      sql`
      select id from data_transfers
      where status in ('DONE', 'FAIL', 'STOP') and updated_at < ${before.toISOString()}::timestamptz
        and mover is null and not (wis2_announced and expires_at > ${now.toISOString()}::timestamptz)
      order by updated_at limit ${limit}::int
      for update skip locked`,
      { state: sql`0`, update: sql``, select: sql`` },
    );
    return batchOf(rowsOf<CountRow>(rows)[0]);
  },

  async purgeIdentities(keep, limit, settledBefore) {
    // Only an identity that received a transfer can go past the limit: the transfers registered since
    // the last batch name the identities to check. The portal's index gives each one's newest first.
    const rows = await purge(
      db,
      sql`
      fresh as (
        select id, destination, target from data_transfers
        where id > coalesce((select identity_checked_id from retention_state where id = 1), 0)
          and created_at < ${settledBefore.toISOString()}::timestamptz
        order by id limit ${limit}::int
      ), identities as (
        select distinct destination, target from fresh
      ), beyond as (
        select old.id from identities i cross join lateral (
          select t.id from data_transfers t
          where t.destination = i.destination and t.target collate "C" = i.target
          order by t.target collate "C", t.id desc offset ${keep}::int
        ) old
      ),`,
      sql`
      select id from data_transfers where id in (select id from beyond) and ${ENDED}
      for update skip locked`,
      {
        state: sql`coalesce((select max(id) from fresh), 0)`,
        update: sql`, identity_checked_id = greatest(s.identity_checked_id, excluded.identity_checked_id)`,
        select: sql`, (select count(*) from fresh) as read`,
      },
    );
    const row = rowsOf<CountRow & { read: string | number }>(rows)[0];
    return { ...batchOf(row), read: Number(row?.read ?? 0) };
  },

  async forgetObjects(now, supersededBefore, limit) {
    const rows = await db.execute(sql`
      with doomed as (
        select s.key from stored_objects s left join data_files f on f.id = s.data_file_id
        where f.id is null or f.deleted_at is not null
          or s.superseded_at < ${supersededBefore.toISOString()}::timestamptz
          or not exists (select 1 from data_transfers t
            where t.data_file_id = s.data_file_id and t.expires_at > ${now.toISOString()}::timestamptz)
        limit ${limit}::int
        for update of s skip locked
      )
      delete from stored_objects where key in (select key from doomed) returning key, size`);
    return rowsOf<{ key: string; size: string | number }>(rows).map((r) => ({ key: r.key, size: Number(r.size) }));
  },

  async knownObjects(keys) {
    if (keys.length === 0) return new Set();
    const rows = await db.execute(sql`
      select key from stored_objects
      where key in (select jsonb_array_elements_text(${JSON.stringify(keys)}::jsonb))`);
    return new Set(rowsOf<{ key: string }>(rows).map((r) => r.key));
  },

  async storeUsage() {
    const [row] = rowsOf<{ objects: string | number; bytes: string | number | null }>(
      await db.execute(sql`select count(*) as objects, sum(size) as bytes from stored_objects`),
    );
    return { objects: Number(row?.objects ?? 0), bytes: Number(row?.bytes ?? 0) };
  },

  async totals() {
    const [row] = rowsOf<CountRow>(
      await db.execute(sql`
        select purged_transfers as transfers, purged_history as history, purged_data_files as data_files
        from retention_state where id = 1`),
    );
    return batchOf(row);
  },
});
