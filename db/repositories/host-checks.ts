import { sql } from 'drizzle-orm';
import { type CheckResult, HISTORY_LENGTH } from '../../core/host-checks/policy.ts';
import type { HostCheckRepo, HostCheckShown } from '../../core/host-checks/ports.ts';
import { type Database, inTurn, jsonColumn, rowsOf } from '../client.ts';
import { checkMails } from './mail-outbox.ts';
import { HOST_COLUMNS, type HostRow, sourceHostOfRow } from './retrieval.ts';

type ClaimedRow = HostRow & {
  nickname: string | null;
  check_filename: string | null;
  check_frequency: string | number | null;
};

type StoredResult = {
  at: string;
  ok: boolean;
  durationMs: number;
  message: string;
};

const dateOf = (value: string | Date | null) => (value === null ? null : new Date(value));
const resultOf = (r: StoredResult): CheckResult => ({
  at: new Date(r.at),
  ok: r.ok,
  durationMs: r.durationMs,
  message: r.message,
});
/** The advisory lock space of the host checks' claims. */
const HOST_CHECK_CLAIMS = 7042;

const numberOrNull = (v: string | number | null) => (v === null ? null : Number(v));

export const hostCheckRepo = (db: Database): HostCheckRepo => ({
  async claim(claim, leaseMs, limit, most, defaultFrequencyMs) {
    // A host is taken by the insert or the conditional update of its row: of two servers that saw it due,
    // the second finds the row leased by the first once it commits, and takes nothing. Due is judged on
    // the host's frequency as it is now, so that a changed checkFrequency applies from the next look.
    const interval = sql`(case when h.check_frequency > 0 then h.check_frequency
      else ${defaultFrequencyMs}::bigint end)::float8 * interval '1 millisecond'`;
    // The bound over all servers counts the checks under way: claims take turns (a lock held to their
    // commit), or two at once would each count the other's place as free.
    const rows = rowsOf<ClaimedRow>(
      await inTurn(db, HOST_CHECK_CLAIMS, (tx) =>
        tx.execute(sql`
      with due as (
        select h.hostid from hosts h
        left join host_checks c on c.hostid = h.hostid
        where h.active and h.check
          and (c.hostid is null or ((c.lease_until is null or c.lease_until < now())
            and (c.started_at is null or c.started_at + ${interval} <= now())))
        order by c.started_at nulls first, h.hostid
        limit (select greatest(0, least(${limit}::int,
          ${most}::int - (select count(*)::int from host_checks where lease_until >= now()))))
      ), claimed as (
        insert into host_checks (hostid, claim, lease_until, started_at)
        select hostid, ${claim}, now() + ${leaseMs}::float8 * interval '1 millisecond', now() from due
        on conflict (hostid) do update
          set claim = excluded.claim, lease_until = excluded.lease_until, started_at = excluded.started_at
          where host_checks.lease_until is null or host_checks.lease_until < now()
        returning hostid
      )
      select ${HOST_COLUMNS}, h.nickname, h.check_filename, h.check_frequency
      from claimed c join hosts h on h.hostid = c.hostid
      left join transfer_methods m on m.name = h.transfer_method_name`),
      ),
    );
    return rows.map((r) => ({
      claim,
      host: {
        ...sourceHostOfRow(r),
        nickname: r.nickname,
        checkFilename: r.check_filename,
        checkFrequency: numberOrNull(r.check_frequency),
      },
    }));
  },
  async finish(claim, hostId, result) {
    // The latest result goes to the front of the history, which keeps HISTORY_LENGTH of those before it.
    const previous = sql`case when checked_at is null then '[]'::jsonb else jsonb_build_array(jsonb_build_object(
      'at', checked_at, 'ok', ok, 'durationMs', duration_ms, 'message', message)) end`;
    const rows = await db.execute(sql`
      with finished as (
        update host_checks set claim = null, lease_until = null,
          checked_at = ${result.at.toISOString()}::timestamptz, ok = ${result.ok}, duration_ms = ${result.durationMs},
          message = ${result.message},
          history = (select coalesce(jsonb_agg(e order by n), '[]'::jsonb)
            from jsonb_array_elements(${previous} || history) with ordinality as x(e, n) where n <= ${HISTORY_LENGTH})
        where hostid = ${hostId} and claim = ${claim} and lease_until is not null
        returning hostid
      ), ${checkMails(sql`finished`, result, result.at.toISOString())}
      select hostid from finished`);
    return rowsOf(rows).length > 0;
  },
  async series() {
    type Row = {
      hostid: string | number;
      destination: string;
      checked_at: string | Date;
      ok: boolean;
      duration_ms: number;
    };
    const rows = rowsOf<Row>(
      await db.execute(sql`
      select c.hostid, a.destination, c.checked_at, c.ok, c.duration_ms
      from host_checks c join hosts h on h.hostid = c.hostid
      join destination_hosts a on a.hostid = c.hostid
      where h.check and c.checked_at is not null
      order by c.hostid, a.destination`),
    );
    return rows.map((r) => ({
      hostId: Number(r.hostid),
      destination: r.destination,
      at: new Date(r.checked_at),
      ok: r.ok,
      durationMs: Number(r.duration_ms),
    }));
  },
  async ofDestination(destination) {
    type Row = {
      hostid: string | number;
      nickname: string | null;
      host: string | null;
      method: string | null;
      check: boolean;
      check_frequency: string | number | null;
      check_filename: string | null;
      lease_until: string | Date | null;
      started_at: string | Date | null;
      checked_at: string | Date | null;
      ok: boolean | null;
      duration_ms: number | null;
      message: string | null;
      history: unknown;
    };
    const rows = rowsOf<Row>(
      await db.execute(sql`
      select h.hostid, h.nickname, h.host, m.ectrans_module_name as method, h.check, h.check_frequency,
        h.check_filename, c.lease_until, c.started_at, c.checked_at, c.ok, c.duration_ms, c.message, c.history
      from destination_hosts a join hosts h on h.hostid = a.hostid
      left join transfer_methods m on m.name = h.transfer_method_name
      left join host_checks c on c.hostid = h.hostid
      where a.destination = ${destination} and (h.check or c.checked_at is not null)
      order by a.priority, h.hostid`),
    );
    return rows.map(
      (r): HostCheckShown => ({
        hostId: Number(r.hostid),
        nickname: r.nickname,
        host: r.host ?? '',
        method: r.method,
        check: r.check,
        checkFrequency: numberOrNull(r.check_frequency),
        checkFilename: r.check_filename,
        runningSince: r.lease_until === null ? null : dateOf(r.started_at),
        latest:
          r.checked_at === null
            ? null
            : {
                at: new Date(r.checked_at),
                ok: r.ok === true,
                durationMs: r.duration_ms ?? 0,
                message: r.message ?? '',
              },
        history: jsonColumn<StoredResult[]>(r.history ?? []).map(resultOf),
      }),
    );
  },
});
