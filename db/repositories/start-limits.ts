import { inArray, sql } from 'drizzle-orm';
import type { DisseminationRepo } from '../../core/dissemination/ports.ts';
import { type Database, rowsOf } from '../client.ts';
import { executePrepared } from '../prepared.ts';
import { destinationRequeues } from '../schema.ts';

type StartLimitMethods = Pick<
  DisseminationRepo,
  'lockForClaim' | 'applyStartLimit' | 'markRequeued' | 'takeRequeued' | 'resetToScheduled'
>;

/** The start and requeue limits' storage: the counters on data_transfers, the requeue mark per destination. */
export const startLimitRepo = (db: Database): StartLimitMethods => ({
  async lockForClaim(destination, hostId) {
    // The host's lock is an advisory one, taken only once the destination's row is: blocking, unlike
    // the row's, so claims of other destinations on this host wait their turn for a moment rather than
    // skip it, and read the host's count only once the others committed. Nothing else waits on it, and
    // a host's own row stays free for its edits. One statement: one round trip for both.
    const rows = await executePrepared(
      db,
      sql`
      with destination as materialized (
        select max_start, start_frequency, max_requeue from destinations where name = ${destination}
        for update skip locked
      )
      -- Out here, the host's lock is asked for only once the row is this claim's: a skipped row waits for nothing.
      select max_start, start_frequency, max_requeue,
        pg_advisory_xact_lock(hashtextextended(${`host:${hostId}`}, 0)) is null as host_locked
      from destination`,
      'lockForClaim',
    );
    const [row] = rowsOf<{ max_start: number | null; start_frequency: number | null; max_requeue: number | null }>(
      rows,
    );
    if (!row) return null;
    return { maxStart: row.max_start, startFrequency: row.start_frequency, maxRequeue: row.max_requeue };
  },
  async applyStartLimit(id, decision, now) {
    const at = now.toISOString();
    const failed = decision.status === 'FAIL';
    const queueAt = decision.status === 'RETR' ? decision.queueAt.toISOString() : null;
    await executePrepared(
      db,
      sql`
      with changed as (
        update data_transfers
        set status = ${decision.status}, start_count = 0, requeue_count = ${decision.requeueCount}::int,
          requeue_history = requeue_history + 1, queue_at = coalesce(${queueAt}::timestamptz, queue_at),
          message = ${decision.comment}, updated_at = ${at}::timestamptz
        where id = ${id}
        returning id, destination, host_id
      )
      insert into transfer_history (transfer_id, destination, host_id, status, at, comment, error)
      select id, destination, host_id, ${decision.status}, ${at}::timestamptz, ${decision.comment}::text,
        ${failed}::boolean
      from changed`,
      'applyStartLimit',
    );
  },
  async markRequeued(destination, now) {
    await db.insert(destinationRequeues).values({ destination, at: now }).onConflictDoNothing();
  },
  async takeRequeued(names) {
    if (names.length === 0) return [];
    const rows = await db
      .delete(destinationRequeues)
      .where(inArray(destinationRequeues.destination, [...names]))
      .returning({ destination: destinationRequeues.destination });
    return rows.map((r) => r.destination);
  },
  async resetToScheduled(destination, now) {
    // Rows a claim holds are skipped, not waited for: that claim may be waiting for this transaction's
    // requeue mark, and whatever it requeues at the start limit marks the destination again.
    const rows = await db.execute(sql`
      with due as (
        select t.id from data_transfers t
        where t.destination = ${destination} and t.status in ('WAIT', 'RETR')
          and (t.start_count > 0 or t.requeue_history > 0)
          and not exists (select 1 from data_files f where f.id = t.data_file_id and f.deleted_at is not null)
        for update of t skip locked
      ), reset as (
        update data_transfers t
        set queue_at = t.scheduled_at, updated_at = ${now.toISOString()}::timestamptz
        from due where t.id = due.id
        returning t.id
      )
      select count(*)::int as n from reset`);
    return Number(rowsOf<{ n: number }>(rows)[0]?.n ?? 0);
  },
});
