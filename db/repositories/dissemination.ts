import { and, count, eq, sql } from 'drizzle-orm';
import type { DisseminationRepo } from '../../core/dissemination/ports.ts';
import { type Database, rowsOf } from '../client.ts';
import { dataTransfers, destinations } from '../schema.ts';

type ClaimedRow = {
  id: string | number;
  attempt: number;
  data_file_id: string | number;
  destination: string;
  target: string;
  source: string;
  size: string | number;
};

export const disseminationRepo = (db: Database): DisseminationRepo => ({
  async lockDestination(destination) {
    const rows = await db
      .select({ name: destinations.name })
      .from(destinations)
      .where(eq(destinations.name, destination))
      .for('update', { skipLocked: true });
    return rows.length === 1;
  },
  async running(destination, hostId) {
    const [row] = await db
      .select({
        destination: count(),
        host: sql<number>`count(*) filter (where ${dataTransfers.hostId} = ${hostId})`.mapWith(Number),
      })
      .from(dataTransfers)
      .where(and(eq(dataTransfers.destination, destination), eq(dataTransfers.status, 'EXEC')));
    return { destination: row?.destination ?? 0, host: row?.host ?? 0 };
  },
  async takeDue({ destination, hostId, mover, limit, now, leaseUntil }) {
    // Raw SQL parameters carry no column type, so times go as ISO text with an explicit cast.
    const at = now.toISOString();
    const rows = await db.execute(sql`
      with due as (
        select id from data_transfers
        where destination = ${destination} and status in ('WAIT', 'RETR', 'INTR')
          and queue_at <= ${at}::timestamptz and expires_at >= ${at}::timestamptz
        order by priority, queue_at, id
        limit ${limit}::int
        for update skip locked
      ), claimed as (
        update data_transfers t
        set status = 'EXEC', mover = ${mover}, attempt = t.attempt + 1, lease_until = ${leaseUntil.toISOString()}::timestamptz,
          host_id = ${hostId}, started_at = coalesce(t.started_at, ${at}::timestamptz), sent = 0,
          updated_at = ${at}::timestamptz
        from due where t.id = due.id
        returning t.id, t.attempt, t.data_file_id, t.destination, t.target, t.priority, t.queue_at
      ), history as (
        insert into transfer_history (transfer_id, destination, host_id, status, at, comment)
        select id, destination, ${hostId}::text, 'EXEC', ${at}::timestamptz, ${`Claimed by ${mover}`}::text from claimed
      )
      select c.id, c.attempt, c.data_file_id, c.destination, c.target, f.source, f.size
      from claimed c join data_files f on f.id = c.data_file_id
      order by c.priority, c.queue_at, c.id`);
    return rowsOf<ClaimedRow>(rows).map((r) => ({
      id: Number(r.id),
      attempt: Number(r.attempt),
      dataFileId: Number(r.data_file_id),
      destination: r.destination,
      target: r.target,
      source: r.source,
      size: Number(r.size),
    }));
  },
  async renewLeases({ mover, leaseUntil }) {
    const rows = await db
      .update(dataTransfers)
      .set({ leaseUntil })
      .where(and(eq(dataTransfers.mover, mover), eq(dataTransfers.status, 'EXEC')))
      .returning({ id: dataTransfers.id });
    return rows.map((r) => r.id);
  },
  async reclaimLapsed(now) {
    const at = now.toISOString();
    const rows = await db.execute(sql`
      with lapsed as (
        select id, destination, host_id, mover from data_transfers
        where status = 'EXEC' and lease_until < ${at}::timestamptz
        for update skip locked
      ), requeued as (
        update data_transfers t
        set status = 'RETR', mover = null, lease_until = null, queue_at = ${at}::timestamptz,
          message = 'Interrupted: its data mover was lost', updated_at = ${at}::timestamptz
        from lapsed where t.id = lapsed.id
        returning t.id
      ), history as (
        insert into transfer_history (transfer_id, destination, host_id, status, at, comment, error)
        select l.id, l.destination, l.host_id, v.status, ${at}::timestamptz, v.comment || l.mover, v.error
        from lapsed l
        cross join (values (1, 'INTR', 'Interrupted: lost DataMover ', true),
                           (2, 'RETR', 'Requeued after losing DataMover ', false)) v(step, status, comment, error)
        order by l.id, v.step
      )
      select count(*)::int as n from requeued`);
    return Number(rowsOf<{ n: number }>(rows)[0]?.n ?? 0);
  },
  async finish({ id, mover, attempt, now, outcome }) {
    const at = now.toISOString();
    const done = outcome.status === 'DONE';
    const queueAt = done ? null : outcome.queueAt.toISOString();
    const message = done ? null : outcome.message;
    const comment = done ? `Sent ${outcome.sent} bytes` : outcome.message;
    const rows = await db.execute(sql`
      with ended as (
        update data_transfers
        set status = ${outcome.status}, mover = null, lease_until = null, sent = ${outcome.sent},
          finished_at = case when ${done}::boolean then ${at}::timestamptz else finished_at end,
          queue_at = coalesce(${queueAt}::timestamptz, queue_at), message = ${message}, updated_at = ${at}::timestamptz
        where id = ${id} and status = 'EXEC' and mover = ${mover} and attempt = ${attempt}
        returning id, data_file_id, destination, host_id
      ), history as (
        insert into transfer_history (transfer_id, destination, host_id, status, at, sent, comment, error)
        select id, destination, host_id, ${outcome.status}::text, ${at}::timestamptz, ${outcome.sent}::bigint,
          ${comment}::text, ${!done}::boolean
        from ended
      ), checksum as (
        update data_files f set checksum = ${done ? outcome.md5 : null}
        from ended where ${done}::boolean and f.id = ended.data_file_id and f.checksum is null
      )
      select count(*)::int as n from ended`);
    return Number(rowsOf<{ n: number }>(rows)[0]?.n ?? 0) === 1;
  },
});
