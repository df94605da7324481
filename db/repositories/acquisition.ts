import { type SQL, sql } from 'drizzle-orm';
import {
  type AcquiredBefore,
  type AcquiringDestination,
  type AcquisitionRepo,
  keyOf,
  type RunOutcome,
  type RunShown,
} from '../../core/acquisition/ports.ts';
import { isSubscription } from '../../core/acquisition/wis2-run.ts';
import { readOptions } from '../../core/hosts/options.ts';
import { type Database, inTurn, jsonColumn, rowsOf } from '../client.ts';
import { HOST_COLUMNS, type HostRow, sourceHostOfRow } from './retrieval.ts';
import { ORIGIN_COLUMNS, originValues } from './wis2-outbox.ts';

type ClaimedRow = HostRow & {
  nickname: string | null;
  transfer_method_name: string | null;
  destinations: unknown;
  acquisition_frequency: string | number | null;
};

type BeforeRow = {
  target: string;
  unique_name: string;
  id: string | number;
  data_file_id: string | number;
  status: string;
  size: string | number;
  source_time: string | Date | null;
};

type RunRow = {
  hostid: string | number | null;
  mover: string | null;
  lease_until: string | Date | null;
  started_at: string | Date | null;
  finished_at: string | Date | null;
  next_at: string | Date | null;
  outcome: string | null;
  output: string | null;
};

/** A jsonb of counters with `counts` added to it, key by key. */
const added = (column: SQL, counts: Record<string, number>) => sql`(
  select coalesce(jsonb_object_agg(key, total), '{}'::jsonb) from (
    select key, sum(value::bigint) as total from (
      select key, value from jsonb_each_text(${column})
      union all select key, value from jsonb_each_text(${JSON.stringify(counts)}::jsonb)
    ) counted group by key
  ) summed)`;

const runOf = (r: RunRow): RunShown => ({
  hostId: Number(r.hostid),
  runningOn: r.lease_until === null ? null : r.mover,
  startedAt: dateOf(r.started_at),
  finishedAt: dateOf(r.finished_at),
  nextAt: dateOf(r.next_at),
  outcome: (r.outcome ?? 'done') as RunOutcome,
  output: r.output ?? '',
});

const dateOf = (value: string | Date | null) => (value === null ? null : new Date(value));

/** The advisory lock space of the acquisition claims. */
const ACQUISITION_CLAIMS = 7041;

// The reference lists a host for its destinations that are active and neither new, stopped nor failed.
const ACQUIRING = sql`d.active and d.status_code not in ('INIT', 'STOP', 'FAIL')`;

export const acquisitionRepo = (db: Database): AcquisitionRepo => ({
  async claim(mover, leaseMs, limit, most) {
    // A host is taken by the insert or the conditional update of its run row: of two movers that saw it
    // due, the second finds the row leased by the first once it commits, and takes nothing. The bound over
    // all movers counts the runs under way: claims take turns (a lock held to their commit), or two at once
    // would each count the other's place as free.
    const rows = rowsOf<ClaimedRow>(
      await inTurn(db, ACQUISITION_CLAIMS, (tx) =>
        tx.execute(sql`
      with due as (
        select h.hostid, r.next_at from hosts h
        left join acquisition_runs r on r.hostid = h.hostid
        where h.type = 'Acquisition' and h.active
          and (r.hostid is null or ((r.lease_until is null or r.lease_until < now())
            and (r.next_at is null or r.next_at <= now())))
          and exists (select 1 from destination_hosts a join destinations d on d.name = a.destination
            where a.hostid = h.hostid and ${ACQUIRING})
        order by r.next_at nulls first, h.hostid
        limit (select greatest(0, least(${limit}::int,
          ${most}::int - (select count(*)::int from acquisition_runs where lease_until >= now()))))
      ), claimed as (
        insert into acquisition_runs (hostid, mover, lease_until, started_at)
        select hostid, ${mover}, now() + ${leaseMs}::float8 * interval '1 millisecond', now() from due
        on conflict (hostid) do update
          set mover = excluded.mover, lease_until = excluded.lease_until, started_at = excluded.started_at
          where (acquisition_runs.lease_until is null or acquisition_runs.lease_until < now())
            and (acquisition_runs.next_at is null or acquisition_runs.next_at <= now())
        returning hostid
      )
      select ${HOST_COLUMNS}, h.nickname, h.transfer_method_name, h.acquisition_frequency,
        (select coalesce(json_agg(json_build_object('name', a.destination, 'sendsNowhere', not exists (
            select 1 from destination_hosts s join hosts sh on sh.hostid = s.hostid
            where s.destination = a.destination and sh.active and sh.type = 'Dissemination'), 'data', d.data)
          order by a.priority, a.destination), '[]')
          from destination_hosts a join destinations d on d.name = a.destination
          where a.hostid = h.hostid and ${ACQUIRING}) as destinations
      from claimed c join hosts h on h.hostid = c.hostid
      left join transfer_methods m on m.name = h.transfer_method_name`),
      ),
    );
    return rows.map((r) => ({
      host: { ...sourceHostOfRow(r), nickname: r.nickname ?? '', transferMethod: r.transfer_method_name },
      destinations: jsonColumn<AcquiringDestination[]>(r.destinations),
      frequencyMs: r.acquisition_frequency === null ? null : Number(r.acquisition_frequency),
    }));
  },
  async renew(mover, hostId, leaseMs) {
    const rows = await db.execute(sql`
      update acquisition_runs set lease_until = now() + ${leaseMs}::float8 * interval '1 millisecond'
      where hostid = ${hostId} and mover = ${mover} and lease_until is not null
      returning hostid`);
    return rowsOf(rows).length > 0;
  },
  async finish(mover, hostId, record, nextInMs) {
    // A Global Cache's counts go with the run's, in its statement: a run another mover took counts nowhere.
    const rows = await db.execute(sql`
      with finished as (
        update acquisition_runs set mover = null, lease_until = null, finished_at = now(),
          next_at = now() + ${nextInMs}::float8 * interval '1 millisecond',
          outcome = ${record.outcome}, output = ${record.output},
          runs = ${added(sql`runs`, { [record.outcome]: 1 })}, entries = ${added(sql`entries`, record.counts)}
        where hostid = ${hostId} and mover = ${mover} and lease_until is not null
        returning hostid
      ), counted as (
        insert into wis2_cache_metrics (report_by, centre_id, downloaded, downloaded_bytes, errors, integrity_failed,
          no_cache, last_download_at, server_up)
        select c."reportBy", c.centre, c.downloaded, c.bytes, c.errors, c."integrityFailed", c."noCache",
          c."lastDownloadAt", c."serverUp"
        from jsonb_to_recordset(${JSON.stringify(record.cache ?? [])}::jsonb) as c("reportBy" text, centre text,
          downloaded bigint, bytes bigint, errors bigint, "integrityFailed" bigint, "noCache" bigint,
          "lastDownloadAt" timestamptz, "serverUp" boolean)
        where exists (select 1 from finished)
        on conflict (report_by, centre_id) do update set
          downloaded = wis2_cache_metrics.downloaded + excluded.downloaded,
          downloaded_bytes = wis2_cache_metrics.downloaded_bytes + excluded.downloaded_bytes,
          errors = wis2_cache_metrics.errors + excluded.errors,
          integrity_failed = wis2_cache_metrics.integrity_failed + excluded.integrity_failed,
          no_cache = wis2_cache_metrics.no_cache + excluded.no_cache,
          last_download_at = greatest(wis2_cache_metrics.last_download_at, excluded.last_download_at),
          server_up = coalesce(excluded.server_up, wis2_cache_metrics.server_up)
      )
      select hostid from finished`);
    return rowsOf(rows).length > 0;
  },
  async acquiredBefore(destination, keys) {
    if (keys.length === 0) return new Map();
    // The keys as one parameter: two per key would pass the protocol's 65,535 past 32,767 entries.
    const wanted = JSON.stringify(keys.map((k) => ({ target: k.target, unique_name: k.uniqueName })));
    // Through the live-key index: one probe per key, however many transfers the destination holds. A key with
    // no live transfer is looked for among the stopped ones whose file was not deleted (an operator's stop
    // keeps the file acquired, as in the reference), through the portal's (destination, target) index.
    const rows = rowsOf<BeforeRow>(
      await db.execute(sql`
      select k.target, k.unique_name, t.id, t.data_file_id, t.status, f.size, f.source_time
      from jsonb_to_recordset(${wanted}::jsonb) k (target text, unique_name text)
      cross join lateral (
        (select t.id, t.data_file_id, t.status from data_transfers t
          where t.destination = ${destination} and t.target = k.target and t.unique_name = k.unique_name
            and t.status not in ('STOP', 'FAIL'))
        union all
        (select t.id, t.data_file_id, t.status from data_transfers t
          join data_files s on s.id = t.data_file_id and s.deleted_at is null
          where t.destination = ${destination} and t.target collate "C" = k.target collate "C"
            and t.unique_name = k.unique_name and t.status = 'STOP'
          order by t.id desc limit 1)
        limit 1
      ) t
      join data_files f on f.id = t.data_file_id`),
    );
    const found = new Map<string, AcquiredBefore>();
    for (const r of rows) {
      found.set(keyOf({ target: r.target, uniqueName: r.unique_name }), {
        dataFileId: Number(r.data_file_id),
        transferId: Number(r.id),
        status: r.status,
        size: Number(r.size),
        time: dateOf(r.source_time),
      });
    }
    return found;
  },
  async firstSeen(destination, messageId, retake) {
    const rows = await db.execute(sql`insert into wis2_received (destination, message_id)
      values (${destination}, ${messageId})
      on conflict (destination, message_id) do update set received_at = excluded.received_at
        where ${retake}::boolean and wis2_received.taken_at is null
      returning message_id`);
    return rowsOf(rows).length > 0;
  },
  async tookMessage(destinations, messageId) {
    await db.execute(sql`update wis2_received set taken_at = now()
      where message_id = ${messageId}
        and destination in (select jsonb_array_elements_text(${JSON.stringify(destinations)}::jsonb))`);
  },
  async republish(destination, origin, dataKey, kind, file, at) {
    const rows = await db.execute(sql`
      with first as (
        insert into wis2_received (destination, message_id, received_at, taken_at)
        values (${destination}, ${dataKey}, ${at.toISOString()}::timestamptz, ${at.toISOString()}::timestamptz)
        on conflict do nothing
        returning destination
      )
      insert into wis2_outbox (data_file_id, transfer_id, destination, target, kind, not_before, ${ORIGIN_COLUMNS})
      select ${file?.dataFileId ?? null}::bigint, ${file?.transferId ?? null}::bigint, destination,
        ${file?.target ?? dataKey}, ${kind}, ${at.toISOString()}::timestamptz, ${originValues(origin)}
      from first
      returning id`);
    return rowsOf(rows).length > 0;
  },
  async forgetReceived(before) {
    await db.execute(sql`delete from wis2_received where received_at < ${before.toISOString()}::timestamptz`);
  },
  async lastRun(hostId) {
    const [r] = rowsOf<RunRow>(await db.execute(sql`select * from acquisition_runs where hostid = ${hostId}`));
    return r ? runOf(r) : null;
  },
  async cacheTotals() {
    type Row = {
      report_by: string;
      centre_id: string;
      downloaded: string | number;
      downloaded_bytes: string | number;
      errors: string | number;
      integrity_failed: string | number;
      no_cache: string | number;
      last_download_at: string | Date | null;
      server_up: boolean | null;
    };
    const rows = rowsOf<Row>(await db.execute(sql`select * from wis2_cache_metrics order by report_by, centre_id`));
    return rows.map((r) => ({
      reportBy: r.report_by,
      centre: r.centre_id,
      downloaded: Number(r.downloaded),
      bytes: Number(r.downloaded_bytes),
      errors: Number(r.errors),
      integrityFailed: Number(r.integrity_failed),
      noCache: Number(r.no_cache),
      lastDownloadAt: dateOf(r.last_download_at),
      serverUp: r.server_up,
    }));
  },
  async totals() {
    type Row = { hostid: string | number; data: string | null; runs: unknown; entries: unknown };
    const rows = rowsOf<Row>(
      await db.execute(sql`
      select r.hostid, h.data, r.runs, r.entries from acquisition_runs r join hosts h on h.hostid = r.hostid
      order by r.hostid`),
    );
    return rows.map((r) => ({
      hostId: Number(r.hostid),
      subscribes: isSubscription(readOptions(r.data ?? '')),
      runs: jsonColumn<Record<string, number>>(r.runs),
      entries: jsonColumn<Record<string, number>>(r.entries),
    }));
  },
  async runsOf(destination) {
    type Row = RunRow & { host_id: string | number; nickname: string | null; host: string | null; active: boolean };
    const rows = rowsOf<Row>(
      await db.execute(sql`
      select h.hostid as host_id, h.nickname, h.host, h.active, r.*
      from destination_hosts a join hosts h on h.hostid = a.hostid
      left join acquisition_runs r on r.hostid = h.hostid
      where a.destination = ${destination} and h.type = 'Acquisition'
      order by a.priority, h.hostid`),
    );
    return rows.map((r) => ({
      hostId: Number(r.host_id),
      nickname: r.nickname,
      host: r.host,
      active: r.active,
      run: r.hostid === null ? null : runOf(r),
    }));
  },
});
