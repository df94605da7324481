import { and, eq, inArray, sql } from 'drizzle-orm';
import { R2_SOURCE_PATTERN, WORKER_SOURCE_PATTERN } from '../../core/data-files/r2-sources.ts';
import type { DisseminationHost, DisseminationRepo } from '../../core/dissemination/ports.ts';
import { type Database, jsonColumn, rowsOf } from '../client.ts';
import { executePrepared, literalLimit, runPrepared } from '../prepared.ts';
import { dataTransfers, destinationState, destinations } from '../schema.ts';
import { activeTimeRanges, timeRangesVersion } from './active-time-ranges.ts';
import { dueQueueRepo } from './due-queue.ts';
import { endMails, holdMails, startMails } from './mail-outbox.ts';
import { opsFigures } from './ops-figures.ts';
import { startLimitRepo } from './start-limits.ts';

type ClaimedRow = {
  id: string | number;
  attempt: number;
  data_file_id: string | number;
  destination: string;
  target: string;
  source: string;
  object_key: string | null;
  stored_md5: string | null;
  stored_size: string | number | null;
  size: string | number;
  priority: number;
  scheduled_at: string | Date;
  queue_at: string | Date;
  started_at: string | Date;
};

/** The time ranges as read by each database handle (a transaction's is its own, read afresh). */
const timeRanges = new WeakMap<Database, ReturnType<typeof activeTimeRanges>>();
const timeRangesOf = (db: Database) => {
  let ranges = timeRanges.get(db);
  if (!ranges) timeRanges.set(db, (ranges = activeTimeRanges(db)));
  return ranges;
};

/** The look's limit, rounded up to a few sizes: each is a statement of its own (see literalLimit). */
function lookLimit(limit: number) {
  let sized = Math.min(limit, 10);
  while (sized < limit) sized *= 2;
  return literalLimit(sized);
}

export const disseminationRepo = (db: Database): DisseminationRepo => ({
  ...startLimitRepo(db),
  ...dueQueueRepo(db),
  opsFigures: (now) => opsFigures(db, now),
  async moverBeat(mover, intervalMs) {
    await db.execute(sql`
      insert into movers (name, started_at, heartbeat_at, heartbeat_ms) values (${mover}, now(), now(), ${intervalMs})
      on conflict (name) do update set heartbeat_at = now(), heartbeat_ms = excluded.heartbeat_ms, stopped_at = null,
        started_at = case when movers.stopped_at is null then movers.started_at else now() end`);
  },
  async moverStopped(mover) {
    await db.execute(sql`update movers set stopped_at = now() where name = ${mover}`);
  },
  async queueDepth() {
    const rows = await db.execute(sql`
      select destination, status, count(*)::int as count from data_transfers
      where status not in ('DONE', 'FAIL', 'STOP')
      group by destination, status order by destination, status`);
    return rowsOf<{ destination: string; status: string; count: number }>(rows).map((r) => ({
      ...r,
      count: Number(r.count),
    }));
  },
  async running(destination, hostId, mover, now, atStartLimit) {
    const at = now.toISOString();
    // Attempts that may still be writing (a mover holds them, whatever their status now), plus the
    // sessions each other mover keeps open to the host beyond its own attempts there: one statement,
    // so both are read at one instant. `start_count > 0` as written lets the planner use the index
    // of the transfers that started before.
    const rows = await executePrepared(
      db,
      sql`
      with at_limit as (
        select id, start_count, requeue_count, priority, queue_at from data_transfers
        where destination = ${destination} and status in ('WAIT', 'RETR', 'INTR') and mover is null
          and start_count > 0 and start_count >= ${atStartLimit?.startLimit ?? MAX_INT}::int
          and queue_at <= ${at}::timestamptz and expires_at >= ${at}::timestamptz
        order by priority, queue_at, id
        limit ${atStartLimit?.limit ?? 0}::int
        for update skip locked
      )
      select
        (select count(*)::int from data_transfers where destination = ${destination} and mover is not null)
          as destination,
        (select count(*)::int from data_transfers where host_id = ${hostId} and mover is not null)
          + (select coalesce(sum(greatest(0, s.sessions - (select count(*) from data_transfers t
              where t.host_id = s.host_id and t.mover = s.mover and t.mover is not null))), 0)::int
            from host_sessions s
            where s.host_id = ${hostId} and s.mover <> ${mover}::text
              and s.lease_until >= ${at}::timestamptz) as host,
        (select coalesce(json_agg(json_build_object('id', id, 'start_count', start_count,
            'requeue_count', requeue_count) order by priority, queue_at, id), '[]') from at_limit) as at_limit`,
      'runningTransfers',
    );
    const [row] = rowsOf<{ destination: number; host: number; at_limit: AtLimitRow[] | string }>(rows);
    const atLimit = jsonColumn<AtLimitRow[] | undefined>(row?.at_limit) ?? [];
    return {
      destination: Number(row?.destination ?? 0),
      host: Number(row?.host ?? 0),
      atStartLimit: atLimit.map((r) => ({
        id: Number(r.id),
        startCount: Number(r.start_count),
        requeueCount: Number(r.requeue_count),
      })),
    };
  },
  async publishSessions({ mover, held, leaseUntil }) {
    if (held.length === 0) {
      await db.execute(sql`delete from host_sessions where mover = ${mover}`);
      return;
    }
    const values = sql.join(
      held.map((h) => sql`(${h.hostId}::text, ${h.sessions}::int)`),
      sql`, `,
    );
    await db.execute(sql`
      with held (host_id, sessions) as (values ${values}),
      written as (
        insert into host_sessions (host_id, mover, sessions, lease_until)
        select host_id, ${mover}::text, sessions, ${leaseUntil.toISOString()}::timestamptz from held
        on conflict (host_id, mover) do update set sessions = excluded.sessions, lease_until = excluded.lease_until
      )
      delete from host_sessions where mover = ${mover} and host_id not in (select host_id from held)`);
  },
  async takeDue({ destination, hostId, mover, limit, now, leaseUntil, workerSourcesOnly, startBelow = MAX_INT }) {
    // Raw SQL parameters carry no column type, so times go as ISO text with an explicit cast.
    const at = now.toISOString();
    const rows = await executePrepared(
      db,
      sql`
      with due as (
        select id from data_transfers
        where destination = ${destination} and status in ('WAIT', 'RETR', 'INTR') and mover is null
          and queue_at <= ${at}::timestamptz and expires_at >= ${at}::timestamptz ${readableSources(workerSourcesOnly)}
          and start_count < ${startBelow}::int
        order by priority, queue_at, id
        limit ${limit}::int
        for update skip locked
      ), claimed as (
        update data_transfers t
        set status = 'EXEC', mover = ${mover}, attempt = t.attempt + 1, start_count = t.start_count + 1,
          lease_until = ${leaseUntil.toISOString()}::timestamptz,
          host_id = ${hostId}, started_at = coalesce(t.started_at, ${at}::timestamptz), sent = 0,
          updated_at = ${at}::timestamptz
        from due where t.id = due.id
        returning t.id, t.attempt, t.data_file_id, t.destination, t.target, t.priority, t.queue_at,
          t.scheduled_at, t.started_at
      ), history as (
        insert into transfer_history (transfer_id, destination, host_id, status, at, comment)
        select id, destination, ${hostId}::text, 'EXEC', ${at}::timestamptz, ${`Claimed by ${mover}`}::text from claimed
      ), mail as (${startMails(sql`claimed`, sql`${hostId}::text`)})
      select c.id, c.attempt, c.data_file_id, c.destination, c.target, f.source, f.object_key, f.size, c.priority,
        c.scheduled_at, c.queue_at, c.started_at, o.md5 as stored_md5, o.size as stored_size
      from claimed c join data_files f on f.id = c.data_file_id
        left join stored_objects o on o.key = f.object_key
      order by c.priority, c.queue_at, c.id`,
      'takeDue',
    );
    return rowsOf<ClaimedRow>(rows).map((r) => ({
      id: Number(r.id),
      attempt: Number(r.attempt),
      dataFileId: Number(r.data_file_id),
      destination: r.destination,
      target: r.target,
      source: r.source,
      objectKey: r.object_key,
      stored: r.stored_md5 === null ? null : { md5: r.stored_md5, size: Number(r.stored_size) },
      size: Number(r.size),
      priority: Number(r.priority),
      scheduledAt: new Date(r.scheduled_at),
      queueAt: new Date(r.queue_at),
      startedAt: new Date(r.started_at),
    }));
  },
  async renewLeases({ mover, leaseUntil, attempts }) {
    const pairs = sql.join(
      attempts.map((a) => sql`(${a.id}::bigint, ${a.attempt}::int)`),
      sql`, `,
    );
    return runPrepared(
      db
        .update(dataTransfers)
        .set({ leaseUntil })
        .where(
          and(
            eq(dataTransfers.mover, mover),
            eq(dataTransfers.status, 'EXEC'),
            sql`(${dataTransfers.id}, ${dataTransfers.attempt}) in (${pairs})`,
          ),
        )
        .returning({ id: dataTransfers.id, attempt: dataTransfers.attempt }),
      'renewLeases',
    );
  },
  async reclaimLapsed(now) {
    const at = now.toISOString();
    const rows = await db.execute(sql`
      with lapsed as (
        select id, destination, host_id, mover from data_transfers
        where mover is not null and lease_until < ${at}::timestamptz and status = 'EXEC'
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
      ), released as (
        -- Attempts an operator ended (hold, stop, forced put, delete) whose mover never came back to
        -- say it stopped writing: their lease is the last word, as for EXEC.
        update data_transfers set mover = null, lease_until = null
        where mover is not null and status <> 'EXEC' and lease_until < ${at}::timestamptz
      )
      select count(*)::int as n from requeued`);
    return Number(rowsOf<{ n: number }>(rows)[0]?.n ?? 0);
  },
  async finish({ id, mover, attempt, now, outcome }) {
    const at = now.toISOString();
    const done = outcome.status === 'DONE';
    const queueAt = done ? null : outcome.queueAt.toISOString();
    const message = done ? null : outcome.message;
    const filter = done ? (outcome.filter ?? null) : null;
    // A failure is written as the reference writes it: STOP with the error, then RETR with the requeue.
    const steps = done
      ? sql`values (1, 'DONE', ${outcome.comment}::text, false)`
      : sql`values (1, 'STOP', ${outcome.message}::text, true), (2, 'RETR', ${outcome.requeueComment}::text, false)`;
    const endReason = sql`${done ? outcome.comment : outcome.message}::text`;
    const rows = await executePrepared(
      db,
      sql`
      with ended as (
        update data_transfers
        set status = ${outcome.status}, mover = null, lease_until = null, sent = ${outcome.sent},
          finished_at = case when ${done}::boolean then ${at}::timestamptz else finished_at end,
          queue_at = coalesce(${queueAt}::timestamptz, queue_at), message = ${message}, updated_at = ${at}::timestamptz
        where id = ${id} and status = 'EXEC' and mover = ${mover} and attempt = ${attempt}
        returning id, data_file_id, destination, host_id, target
      ), history as (
        insert into transfer_history (transfer_id, destination, host_id, status, at, sent, comment, error)
        select e.id, e.destination, e.host_id, v.status, ${at}::timestamptz, ${outcome.sent}::bigint, v.comment, v.error
        from ended e cross join (${steps}) v(step, status, comment, error)
        order by v.step
      ), ${endMails(sql`ended`, sql`not ${done}::boolean`, endReason, at)}, checksum as (
        -- One update of the file: two of the same row in one statement would keep only one.
        update data_files f set checksum = coalesce(f.checksum, ${done ? outcome.md5 : null}::text),
          filter_name = case when ${filter !== null}::boolean then ${filter?.name ?? null}::text else f.filter_name end,
          filter_size = case when ${filter !== null}::boolean then ${filter?.size ?? null}::bigint
            else f.filter_size end,
          filter_checksum = case when ${filter !== null}::boolean then ${filter?.md5 ?? null}::text
            else f.filter_checksum end
        from ended where ${done}::boolean and f.id = ended.data_file_id
          and (f.checksum is null or ${filter !== null}::boolean)
      ), released as (
        -- An operator changed the transfer while this attempt ran: nothing of the outcome is written,
        -- but the attempt has stopped writing, so the transfer may be claimed again.
        update data_transfers set mover = null, lease_until = null
        where id = ${id} and status <> 'EXEC' and mover = ${mover} and attempt = ${attempt}
      )
      select count(*)::int as n from ended`,
      'finishAttempt',
    );
    return Number(rowsOf<{ n: number }>(rows)[0]?.n ?? 0) === 1;
  },
  async dueDestinations(now, limit, filter = {}) {
    const at = now.toISOString();
    const ranges = timeRangesOf(db);
    if (ranges.version() === null) await ranges.read();
    // From the queue's index on, each destination's rows are read through their keys: the lateral
    // subqueries, kept apart by `offset 0`, leave the planner no join to choose. On tables never
    // analyzed (the embedded database's never are), it scanned every host, and every destination's
    // state, for each due destination.
    const sizedLimit = lookLimit(limit);
    const look = async (closed: string) =>
      rowsOf<DueRow & { ranges_version: string }>(
        await executePrepared(
          db,
          sql`
        with due as (
        select q.next_at, d.name, t.label as type_label, d.max_connections, d.retry_count, d.retry_frequency,
          d.on_host_failure, d.reset_frequency, s.host_index, s.host_failures, s.rounds, s.left_primary_at, due.at,
          hs.hosts
        from destination_queue q
        cross join lateral (select * from destinations d where d.name = q.destination offset 0) d
        cross join lateral (select t.label from destination_types t where t.id = d.type offset 0) t
        left join lateral (select * from destination_state s where s.destination = d.name offset 0) s on true
        join lateral (
          select queue_at as at from data_transfers
          where destination = d.name and status in ('WAIT', 'RETR', 'INTR') and mover is null
            and queue_at <= ${at}::timestamptz and expires_at >= ${at}::timestamptz
            ${readableSources(filter.workerSourcesOnly)}
          order by priority, queue_at, id
          limit 1
        ) due on true
        cross join lateral (
          select coalesce(json_agg(json_build_object('hostid', h.hostid, 'module', m.ectrans_module_name,
            'host', h.host, 'login', h.login, 'passwd_sealed', h.passwd_sealed, 'dir', h.dir, 'data', h.data,
            'max_connections', h.max_connections, 'retry_count', h.retry_count, 'retry_frequency', h.retry_frequency,
            'filter_name', h.filter_name, 'network', coalesce(nullif(h.network_name, ''), nullif(h.network_code, '')))
            order by a.priority, h.hostid), '[]') as hosts
          from destination_hosts a
          cross join lateral (select * from hosts h where h.hostid = a.hostid offset 0) h
          left join lateral (select m.ectrans_module_name from transfer_methods m
            where m.name = h.transfer_method_name offset 0) m on true
          where a.destination = d.name and h.active and h.type = 'Dissemination'
        ) hs
        where q.next_at <= ${at}::timestamptz and d.active and d.status_code in ('WAIT', 'EXEC')
          -- A destination at its limit cannot start anything: it must not take the place of one that can.
          and (coalesce(d.max_connections, 1) < 0 or (select count(*) from data_transfers r
            where r.destination = d.name and r.mover is not null) < coalesce(d.max_connections, 1))
          ${filter.destination === undefined ? sql`` : sql`and d.name = ${filter.destination}`}
          ${withModules(filter.modules)}
          and (s.paused_until is null or s.paused_until <= ${at}::timestamptz)
          and d.name not in (select jsonb_array_elements_text(${closed}::jsonb))
        order by q.next_at, d.name
        limit ${sizedLimit})
        -- The version of the time ranges comes even when nothing is due: a range opened meanwhile may be why.
        select ${timeRangesVersion} as ranges_version, due.* from (select 1) one left join due on true
        order by due.next_at, due.name`,
          'dueDestinations',
        ),
      );
    let looked = await look(ranges.closedAt(now));
    if (looked[0]!.ranges_version !== ranges.version()) {
      await ranges.read();
      looked = await look(ranges.closedAt(now));
    }
    const rows = looked.filter((r) => r.name !== null).slice(0, limit);
    const hostsOf = (r: DueRow): DisseminationHost[] =>
      jsonColumn<HostRow[]>(r.hosts).map((h) => ({
        hostId: String(h.hostid),
        module: h.module,
        host: h.host ?? '',
        login: h.login ?? '',
        passwdSealed: h.passwd_sealed,
        dir: h.dir ?? '',
        data: h.data,
        maxConnections: numberOrNull(h.max_connections),
        retryCount: numberOrNull(h.retry_count),
        retryFrequency: numberOrNull(h.retry_frequency),
        network: h.network,
        filterName: h.filter_name,
      }));
    return rows.map((r) => ({
      name: r.name,
      typeLabel: r.type_label,
      maxConnections: numberOrNull(r.max_connections),
      retry: {
        retryCount: numberOrNull(r.retry_count),
        retryFrequency: numberOrNull(r.retry_frequency),
        onHostFailure: numberOrNull(r.on_host_failure),
        resetFrequency: numberOrNull(r.reset_frequency),
      },
      hosts: hostsOf(r),
      state: {
        hostIndex: Number(r.host_index ?? 0),
        hostFailures: Number(r.host_failures ?? 0),
        rounds: Number(r.rounds ?? 0),
        leftPrimaryAt: r.left_primary_at === null ? null : new Date(r.left_primary_at).getTime(),
      },
    }));
  },
  async lockFailover(destination) {
    const locked = () =>
      runPrepared(
        db.select().from(destinationState).where(eq(destinationState.destination, destination)).for('update'),
        'lockFailover',
      );
    // Created by the first attempt that ends: one round trip under the lock for every later one.
    let [row] = await locked();
    if (!row) {
      await db.insert(destinationState).values({ destination }).onConflictDoNothing();
      [row] = await locked();
    }
    if (!row) throw new Error(`destination ${destination} has no state row`);
    return {
      state: {
        hostIndex: row.hostIndex,
        hostFailures: row.hostFailures,
        rounds: row.rounds,
        leftPrimaryAt: row.leftPrimaryAt?.getTime() ?? null,
      },
      pausedUntil: row.pausedUntil,
      pauseReason: row.pauseReason === 'retry' || row.pauseReason === 'sleep' ? row.pauseReason : null,
    };
  },
  async finishDelivered({ now, ends }) {
    if (ends.length === 0) return [];
    const at = now.toISOString();
    const input = ends.map((e, ord) => ({
      ord,
      id: e.id,
      attempt: e.attempt,
      mover: e.mover,
      sent: e.sent,
      md5: e.md5,
      comment: e.comment,
      filter_name: e.filter?.name ?? null,
      filter_size: e.filter?.size ?? null,
      filter_md5: e.filter?.md5 ?? null,
      host_index: e.success.hostIndex,
      away: e.success.awayFromPrimary,
    }));
    const rows = await executePrepared(
      db,
      sql`
      with input as (
        select * from jsonb_to_recordset(${JSON.stringify(input)}::jsonb) as i(ord int, id bigint, attempt int,
          mover text, sent bigint, md5 text, comment text, filter_name text, filter_size bigint, filter_md5 text,
          host_index int, away boolean)
      ), ended as (
        update data_transfers t
        set status = 'DONE', mover = null, lease_until = null, sent = i.sent, finished_at = ${at}::timestamptz,
          message = null, updated_at = ${at}::timestamptz
        from input i
        where t.id = i.id and t.status = 'EXEC' and t.mover = i.mover and t.attempt = i.attempt
        returning t.id, t.attempt, t.data_file_id, t.destination, t.host_id, t.target, i.ord, i.sent, i.comment, i.md5,
          i.filter_name, i.filter_size, i.filter_md5, i.host_index, i.away
      ), history as (
        insert into transfer_history (transfer_id, destination, host_id, status, at, sent, comment, error)
        select id, destination, host_id, 'DONE', ${at}::timestamptz, sent, comment, false from ended order by ord
      ), ${endMails(sql`ended`, sql`false`, sql`e.comment`, at)}, checksum as (
        -- One update per file, the last of its ends: two of the same row in one statement would keep only one.
        update data_files f set checksum = coalesce(f.checksum, e.md5),
          filter_name = case when e.filter_name is not null then e.filter_name else f.filter_name end,
          filter_size = case when e.filter_name is not null then e.filter_size else f.filter_size end,
          filter_checksum = case when e.filter_name is not null then e.filter_md5 else f.filter_checksum end
        from (select distinct on (data_file_id) * from ended order by data_file_id, ord desc) e
        where f.id = e.data_file_id and (f.checksum is null or e.filter_name is not null)
      ), released as (
        -- An operator changed the transfer while this attempt ran: nothing of the outcome is written,
        -- but the attempt has stopped writing, so the transfer may be claimed again.
        update data_transfers t set mover = null, lease_until = null
        from input i
        where t.id = i.id and t.status <> 'EXEC' and t.mover = i.mover and t.attempt = i.attempt
      ), succeeded as (
        -- Each destination's successes in order, as one: the last host used, and the time the ring
        -- left its primary kept only if every one of them was away from it.
        select distinct on (destination) destination, host_index, host_id,
          bool_and(away) over (partition by destination) as away
        from ended order by destination, ord desc
      ), ring as (
        -- No read before the write; rows in name order, as every writer of several rings takes them.
        insert into destination_state (destination, host_index, host_failures, rounds, last_host_id, last_success_at)
        select destination, host_index, 0, 0, host_id, ${at}::timestamptz from succeeded order by destination
        on conflict (destination) do update set host_index = excluded.host_index, host_failures = 0, rounds = 0,
          left_primary_at = case when (select s.away from succeeded s where s.destination = excluded.destination)
            then destination_state.left_primary_at end,
          paused_until = null, pause_reason = null, last_host_id = excluded.last_host_id,
          last_success_at = excluded.last_success_at
      )
      select id, attempt from ended`,
      'finishDelivered',
    );
    return rowsOf<{ id: string | number; attempt: number }>(rows).map((r) => ({
      id: Number(r.id),
      attempt: Number(r.attempt),
    }));
  },
  async saveFailover(destination, { state, pausedUntil, pauseReason }, result) {
    const saved = db
      .update(destinationState)
      .set({
        hostIndex: state.hostIndex,
        hostFailures: state.hostFailures,
        rounds: state.rounds,
        leftPrimaryAt: state.leftPrimaryAt === null ? null : new Date(state.leftPrimaryAt),
        pausedUntil,
        pauseReason,
        lastHostId: result.hostId,
        ...(result.error === null
          ? { lastSuccessAt: result.at }
          : { lastErrorAt: result.at, lastError: result.error.slice(0, 1000) }),
      })
      .where(eq(destinationState.destination, destination));
    await runPrepared(saved, 'saveFailover');
  },
  async holdDestination(destination) {
    await db.execute(sql`
      with held as (
        update destinations set status_code = 'HOLD', scheduler_status = null
        where name = ${destination} and status_code in ('WAIT', 'EXEC')
        returning *
      )
      ${holdMails(sql`held`)}`);
  },
  async failDestination(destination) {
    await db
      .update(destinations)
      .set({ statusCode: 'FAIL', schedulerStatus: null })
      .where(and(eq(destinations.name, destination), inArray(destinations.statusCode, ['WAIT', 'EXEC'])));
  },
  async schedulerViews(names, now) {
    const at = now.toISOString();
    const rows = await executePrepared(
      db,
      // The named destinations first, then their transfers, a destination at a time, each through an
      // index of its own: otherwise Postgres hashed every live transfer for the resending check, and
      // looked for a due one along the expiry index, costs that grew with every destination's backlog.
      // The named rows through their keys (`offset 0` keeps each lookup apart): joined, a list of names
      // taken for a hundred made Postgres scan every destination.
      sql`
      with named as materialized (
        select d.name, d.scheduler_status as shown, d.xmin::text as version, s.paused_until, s.pause_reason
        from (select distinct name from jsonb_array_elements_text(${JSON.stringify(names)}::jsonb) as n(name)) wanted
        cross join lateral (select d.name, d.scheduler_status, d.xmin from destinations d
          where d.name = wanted.name and d.status_code in ('WAIT', 'EXEC') offset 0) d
        left join lateral (select s.paused_until, s.pause_reason from destination_state s
          where s.destination = d.name offset 0) s on true
      )
      select n.*, exists (select 1 from destination_requeues r where r.destination = n.name) as requeued,
        running.sending, running.resending, due.found is not null as due
      from named n
      -- At most the destination's connections: the transfers being sent.
      cross join lateral (select count(*) > 0 as sending,
          coalesce(bool_or(attempt > 1 and message is not null), false) as resending
        from data_transfers where destination = n.name and status = 'EXEC') running
      -- Due as a claim finds it (no attempt still writing it), in the order of the claim's index.
      left join lateral (select true as found from data_transfers
        where destination = n.name and status in ('WAIT', 'RETR', 'INTR') and mover is null
          and queue_at <= ${at}::timestamptz
        order by priority, queue_at, id limit 1) due on true`,
      'schedulerViews',
    );
    return new Map(
      rowsOf<SchedulerRow>(rows).map((row) => [
        row.name,
        {
          shown: row.shown,
          version: row.version,
          requeued: row.requeued,
          sending: row.sending,
          resending: row.resending,
          due: row.due,
          pausedUntil: row.paused_until === null ? null : new Date(row.paused_until),
          pauseReason: row.pause_reason === 'retry' || row.pause_reason === 'sleep' ? row.pause_reason : null,
        },
      ]),
    );
  },
  async showSchedulerStatus(destination, status, version) {
    // A row's xmin changes with every write of it: the row is still the one read when it is the same.
    const rows = await executePrepared(
      db,
      sql`
      update destinations set scheduler_status = ${status}
      where name = ${destination} and status_code in ('WAIT', 'EXEC')
        and (${version ?? null}::text is null or xmin::text = ${version ?? null}::text)
      returning name`,
      'showSchedulerStatus',
    );
    return rowsOf(rows).length > 0;
  },
});

type AtLimitRow = { id: string | number; start_count: number; requeue_count: number };

type SchedulerRow = {
  name: string;
  shown: string | null;
  version: string;
  requeued: boolean;
  paused_until: string | Date | null;
  pause_reason: string | null;
  sending: boolean;
  resending: boolean;
  due: boolean;
};

type DueRow = {
  name: string;
  type_label: string;
  max_connections: number | null;
  retry_count: number | null;
  retry_frequency: number | null;
  on_host_failure: number | null;
  reset_frequency: string | number | null;
  host_index: number | null;
  host_failures: number | null;
  rounds: number | null;
  left_primary_at: string | Date | null;
  /** Its active dissemination hosts in priority order (json_agg: parsed by postgres.js, text from some drivers). */
  hosts: HostRow[] | string;
};

type HostRow = {
  hostid: string | number;
  module: string | null;
  host: string | null;
  login: string | null;
  passwd_sealed: string | null;
  dir: string | null;
  data: string;
  max_connections: number | null;
  retry_count: number | null;
  retry_frequency: number | null;
  network: string | null;
  filter_name: string | null;
};

/**
 * Transfers whose source this kind of mover reads. A Worker has no file system: http(s) URLs and R2
 * objects (core's WORKER_SOURCE_PATTERN, a constant). A Node mover reads everything but R2 objects,
 * which it leaves to Workers rather than fail them against a host.
 */
const MAX_INT = 2_147_483_647;

const readableSources = (only: boolean | undefined) =>
  only
    ? sql`and exists (select 1 from data_files f where f.id = data_transfers.data_file_id
        and f.source ~* ${sql.raw(`'${WORKER_SOURCE_PATTERN}'`)})`
    : sql`and not exists (select 1 from data_files f where f.id = data_transfers.data_file_id
        and f.source ~* ${sql.raw(`'${R2_SOURCE_PATTERN}'`)})`;

// A probe of the destination's own hosts (`offset 0` keeps it one: as a join, it read every destination's).
const withModules = (modules: readonly string[] | undefined) =>
  modules === undefined
    ? sql``
    : sql`and exists (select 1 from destination_hosts a
        cross join lateral (select * from hosts h where h.hostid = a.hostid offset 0) h
        cross join lateral (select m.ectrans_module_name from transfer_methods m
          where m.name = h.transfer_method_name offset 0) m
        where a.destination = d.name and h.active and h.type = 'Dissemination'
          and m.ectrans_module_name in (${sql.join(
            modules.map((m) => sql`${m}`),
            sql`, `,
          )}) offset 0)`;

const numberOrNull = (v: string | number | null) => (v === null ? null : Number(v));
