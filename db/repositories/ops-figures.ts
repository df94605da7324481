import { sql } from 'drizzle-orm';
import { DEFAULT_MAX_PENDING } from '../../core/data-files/put-plan.ts';
import { shownStatusCode } from '../../core/destinations/model.ts';
import type { OpsFigures } from '../../core/dissemination/ports.ts';
import { type Database, jsonColumn, rowsOf } from '../client.ts';

type FiguresRow = {
  destinations: unknown;
  outbox_pending: string | number;
  outbox_oldest: string | Date | null;
  movers: unknown;
};
type DestinationJson = {
  name: string;
  status_code: string;
  scheduler_status: string | null;
  max_pending: number | null;
  max_inactivity: number | string | null;
  waiting: number;
  oldest: string | null;
  failed: number;
};

/** A mover silent for longer than this is gone for good (a restart may take a new name): no longer shown. */
const FORGOTTEN_AFTER = '7 days';

/**
 * Everything the alerts of /metrics read, in one statement run at every scrape, so none of it may read
 * every transfer: each destination's waiting transfers are counted through `data_transfers_monitor`
 * (destination, status) and its failed attempts of the hour through `transfer_history_destination`
 * (destination, at), one seek each; the outbox's pending rows are read in the partial index of rows not
 * done; the movers' heartbeats are a row each.
 * test/query-plans/ops-figures.test.ts holds the plans to that.
 */
export async function opsFigures(db: Database, now: Date): Promise<OpsFigures> {
  const at = now.toISOString();
  const hourAgo = new Date(now.getTime() - 3_600_000).toISOString();
  const [row] = rowsOf<FiguresRow>(
    await db.execute(sql`
      select
        (select coalesce(json_agg(json_build_object(
            'name', d.name, 'status_code', d.status_code, 'scheduler_status', d.scheduler_status,
            'max_pending', d.max_pending, 'max_inactivity', d.max_inactivity,
            'waiting', w.waiting, 'oldest', w.oldest, 'failed', f.failed)
            order by d.name), '[]')
          from destinations d
          cross join lateral (
            select count(*)::int as waiting,
              min(t.scheduled_at) filter (where t.scheduled_at <= ${at}::timestamptz) as oldest
            from data_transfers t
            where t.destination = d.name and t.status in ('WAIT', 'RETR', 'INTR')) w
          cross join lateral (
            select count(distinct h.transfer_id)::int as failed from transfer_history h
            where h.destination = d.name and h.at > ${hourAgo}::timestamptz and h.error) f
        ) as destinations,
        (select count(*) from wis2_outbox where done_at is null) as outbox_pending,
        (select min(not_before) from wis2_outbox
          where done_at is null and not_before <= ${at}::timestamptz) as outbox_oldest,
        (select coalesce(json_agg(json_build_object('mover', m.name, 'heartbeat_ms', m.heartbeat_ms,
            'age', extract(epoch from now() - m.heartbeat_at)) order by m.name), '[]')
          from movers m
          where m.stopped_at is null and m.heartbeat_at > now() - ${FORGOTTEN_AFTER}::interval
        ) as movers`),
  );
  const destinations = jsonColumn<DestinationJson[]>(row!.destinations);
  const movers = jsonColumn<Array<{ mover: string; heartbeat_ms: number; age: number | string }>>(row!.movers);
  return {
    destinations: destinations.map((d) => {
      const maxPending = d.max_pending ?? DEFAULT_MAX_PENDING;
      return {
        destination: d.name,
        status: shownStatusCode({ statusCode: d.status_code, schedulerStatus: d.scheduler_status }),
        waiting: Number(d.waiting),
        oldestWaitingSince: d.oldest === null ? null : new Date(d.oldest),
        failedLastHour: Number(d.failed),
        maxPending: maxPending > 0 ? maxPending : null,
        maxInactivityMs: Number(d.max_inactivity ?? 0) > 0 ? Number(d.max_inactivity) : null,
      };
    }),
    wis2Outbox: {
      pending: Number(row!.outbox_pending),
      oldestDueAt: row!.outbox_oldest === null ? null : new Date(row!.outbox_oldest),
    },
    movers: movers.map((m) => ({
      mover: m.mover,
      heartbeatAgeSeconds: Math.max(0, Math.round(Number(m.age))),
      heartbeatSeconds: Number(m.heartbeat_ms) / 1000,
    })),
  };
}
