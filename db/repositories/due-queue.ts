import { sql } from 'drizzle-orm';
import type { DisseminationRepo } from '../../core/dissemination/ports.ts';
import { type Database, rowsOf } from '../client.ts';
import { executePrepared } from '../prepared.ts';

type DueQueueMethods = Pick<DisseminationRepo, 'settleDueQueue' | 'staleInDueQueue'>;

const valuesOf = (names: string[]) =>
  sql.join(
    names.map((name) => sql`(${name}::text)`),
    sql`, `,
  );

/** The advisory lock space of the queue's destinations (migration 0025's trigger takes it shared). */
const QUEUE_LOCKS = 7425;

/**
 * The due queue's upkeep (`destination_queue`, lowered by its trigger): a destination's time raised
 * to its earliest waiting transfer, or the destination taken out when none waits, once the time
 * it had passed with nothing due.
 */
export const dueQueueRepo = (db: Database): DueQueueMethods => ({
  async settleDueQueue(destinations, now) {
    if (destinations.length === 0) return;
    await db.transaction(async (tx) => {
      // A put whose transfer is still uncommitted holds its destination's lock shared: that one is
      // left as it is. The next statement's snapshot sees every transfer committed before the lock.
      const locked = rowsOf<{ destination: string }>(
        await tx.execute(sql`
          select v.d as destination from (values ${valuesOf(destinations)}) v(d)
          where pg_try_advisory_xact_lock(${QUEUE_LOCKS}::int, hashtext(v.d))`),
      ).map((r) => r.destination);
      if (locked.length === 0) return;
      await tx.execute(sql`
        with next as (
          select q.destination, (
            select min(t.queue_at) from data_transfers t
            where t.destination = q.destination and t.status in ('WAIT', 'RETR', 'INTR') and t.mover is null
              and t.expires_at >= ${now.toISOString()}::timestamptz
          ) as at
          from destination_queue q where q.destination in (select v.d from (values ${valuesOf(locked)}) v(d))
        ), emptied as (
          delete from destination_queue q using next n where q.destination = n.destination and n.at is null
        )
        update destination_queue q set next_at = n.at
        from next n where q.destination = n.destination and n.at is not null and q.next_at < n.at`);
    });
  },
  async staleInDueQueue(now, limit) {
    const at = now.toISOString();
    const rows = await executePrepared(
      db,
      sql`
      select q.destination from destination_queue q
      where q.next_at <= ${at}::timestamptz and not exists (
        select 1 from data_transfers t
        where t.destination = q.destination and t.status in ('WAIT', 'RETR', 'INTR') and t.mover is null
          and t.queue_at <= ${at}::timestamptz and t.expires_at >= ${at}::timestamptz)
      order by q.next_at
      limit ${limit}::int`,
      'staleInDueQueue',
    );
    return rowsOf<{ destination: string }>(rows).map((r) => r.destination);
  },
});
