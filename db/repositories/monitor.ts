import { type SQL, sql } from 'drizzle-orm';
import type { TransferHistoryEntry } from '../../core/dissemination/ports.ts';
import type { DestinationOverview, MonitorRepo } from '../../core/monitor/ports.ts';
import { type Database, rowsOf } from '../client.ts';

// Times come back as epoch milliseconds: both drivers give a plain number, whatever their date parsing.
const ms = (column: SQL) => sql`(extract(epoch from ${column}) * 1000)::float8`;
const dateOf = (v: number | string | null) => (v === null ? null : new Date(Number(v)));
const inList = (values: Array<string | number>) =>
  sql.join(
    values.map((v) => sql`${v}`),
    sql`, `,
  );
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
// The status a destination shows (core's shownStatusCode), for filtering by it in the database.
const SHOWN = sql`case when d.status_code in ('WAIT', 'EXEC') and d.scheduler_status is not null
  then d.scheduler_status else d.status_code end`;

type DestinationRow = {
  name: string;
  status_code: string;
  scheduler_status: string | null;
  active: boolean;
  comment: string | null;
  host_index: number | null;
  last_success_at: number | null;
  last_error_at: number | null;
  last_error: string | null;
  last_host_id: string | null;
};
type TransferRow = {
  id: number | string;
  data_file_id: number | string;
  destination: string;
  target: string;
  unique_name: string;
  status: string;
  priority: number;
  scheduled_at: number;
  expires_at: number;
  message: string | null;
  source: string;
  size: number | string;
  checksum: string | null;
  sha512: string | null;
  updated_at: number;
};

export const monitorRepo = (db: Database): MonitorRepo => ({
  async destinations({ name, after, prefix, shown, limit }) {
    const where: SQL[] = [sql`true`];
    if (name !== undefined) where.push(sql`d.name = ${name}`);
    if (after !== undefined) where.push(sql`d.name > ${after}`);
    if (prefix) where.push(sql`lower(d.name) like lower(${likePrefix(prefix)})`);
    if (shown) where.push(sql`${SHOWN} = ${shown}`);
    const rows = rowsOf<DestinationRow>(
      await db.execute(sql`
        select d.name, d.status_code, d.scheduler_status, d.active, d.comment, s.host_index,
          ${ms(sql`s.last_success_at`)} as last_success_at, ${ms(sql`s.last_error_at`)} as last_error_at,
          s.last_error, s.last_host_id
        from destinations d
        left join lateral (select * from destination_state s where s.destination = d.name offset 0) s on true
        where ${sql.join(where, sql` and `)}
        order by d.name
        limit ${limit}::int`),
    );
    if (rows.length === 0) return [];
    const names = sql.join(
      rows.map((r) => sql`(${r.name}::text)`),
      sql`, `,
    );
    // Two reads for the whole page, whatever its length: counts from the monitor index, the rings. Each
    // destination of the page is probed through its keys (`offset 0` keeps each probe apart): as joins
    // on tables never analyzed (the embedded database's never are), they read every transfer and host.
    const [counted, ringed] = await Promise.all([
      db.execute(sql`
        select n.destination, c.status, c.n from (values ${names}) n(destination)
        cross join lateral (select status, count(*)::int as n from data_transfers t
          where t.destination = n.destination group by status offset 0) c`),
      db.execute(sql`
        select n.destination, h.hostid, h.nickname, h.host from (values ${names}) n(destination)
        cross join lateral (select a.hostid, a.priority from destination_hosts a
          where a.destination = n.destination offset 0) a
        cross join lateral (select h.hostid, h.nickname, h.host from hosts h
          where h.hostid = a.hostid and h.active and h.type = 'Dissemination' offset 0) h
        order by n.destination, a.priority, h.hostid`),
    ]);
    const counts = new Map<string, Record<string, number>>();
    for (const c of rowsOf<{ destination: string; status: string; n: number }>(counted)) {
      const of = counts.get(c.destination) ?? {};
      of[c.status] = Number(c.n);
      counts.set(c.destination, of);
    }
    const hosts = new Map<string, DestinationOverview['hosts']>();
    type HostRow = { destination: string; hostid: number | string; nickname: string | null; host: string | null };
    for (const h of rowsOf<HostRow>(ringed)) {
      const ring = hosts.get(h.destination) ?? [];
      ring.push({ hostId: String(h.hostid), nickname: h.nickname, host: h.host });
      hosts.set(h.destination, ring);
    }
    return rows.map((r) => ({
      name: r.name,
      statusCode: r.status_code,
      schedulerStatus: r.scheduler_status,
      active: r.active,
      comment: r.comment,
      counts: counts.get(r.name) ?? {},
      hosts: hosts.get(r.name) ?? [],
      hostIndex: Number(r.host_index ?? 0),
      lastSuccessAt: dateOf(r.last_success_at),
      lastErrorAt: dateOf(r.last_error_at),
      lastError: r.last_error,
      lastHostId: r.last_host_id,
    }));
  },

  async hostsOf(destination) {
    type Row = {
      hostid: number | string;
      nickname: string | null;
      host: string | null;
      method: string | null;
      active: boolean;
      status: string | null;
      at: number | null;
      comment: string | null;
      error: boolean | null;
    };
    // An attempt ends DONE, STOP (its error) or INTR (its mover lost); manual changes carry no host.
    const rows = rowsOf<Row>(
      await db.execute(sql`
        select h.hostid, h.nickname, h.host, h.transfer_method_name as method, h.active,
          l.status, ${ms(sql`l.at`)} as at, l.comment, l.error
        from destination_hosts a
        cross join lateral (select * from hosts h where h.hostid = a.hostid offset 0) h
        left join lateral (
          select status, at, comment, error from transfer_history th
          where th.destination = a.destination and th.host_id = h.hostid::text and th.host_id is not null
            and th.status in ('DONE', 'STOP', 'INTR')
          order by th.at desc limit 1
        ) l on true
        where a.destination = ${destination} and h.type = 'Dissemination'
        order by a.priority, h.hostid`),
    );
    return rows.map((r) => ({
      hostId: String(r.hostid),
      nickname: r.nickname,
      host: r.host,
      method: r.method,
      active: r.active,
      last:
        r.status === null || r.at === null
          ? null
          : { status: r.status, at: new Date(Number(r.at)), comment: r.comment, error: r.error === true },
    }));
  },

  async transfers(destination, { status, before, limit }) {
    // Newest first across statuses without a sort of the destination's every transfer: the statuses
    // present are found by skipping through the monitor index, then each gives its newest page.
    const statuses = status
      ? sql`select ${status}::text as status`
      : sql`
        with recursive st(status) as (
          select min(status) from data_transfers where destination = ${destination}
          union all
          select (select min(status) from data_transfers where destination = ${destination} and status > st.status)
          from st where st.status is not null
        ) select status from st where status is not null`;
    const older = before === undefined ? sql`` : sql`and id < ${before}::bigint`;
    const rows = rowsOf<TransferRow>(
      await db.execute(sql`
        with ids as (
          select p.id from (${statuses}) s cross join lateral (
            select id from data_transfers
            where destination = ${destination} and status = s.status ${older}
            order by id desc limit ${limit}::int
          ) p
          order by p.id desc limit ${limit}::int
        )
        select t.id, t.data_file_id, t.destination, t.target, t.unique_name, t.status, t.priority,
          ${ms(sql`t.scheduled_at`)} as scheduled_at, ${ms(sql`t.expires_at`)} as expires_at, t.message,
          f.source, f.size, f.checksum, f.sha512, ${ms(sql`t.updated_at`)} as updated_at
        from ids join data_transfers t on t.id = ids.id join data_files f on f.id = t.data_file_id
        order by t.id desc`),
    );
    if (rows.length === 0) return [];
    type HistoryRow = {
      transfer_id: number | string;
      at: number;
      status: string;
      host_id: string | null;
      sent: number | string;
      comment: string | null;
      error: boolean;
    };
    const history = rowsOf<HistoryRow>(
      await db.execute(sql`
        select transfer_id, ${ms(sql`at`)} as at, status, host_id, sent, comment, error from transfer_history
        where transfer_id in (${inList(rows.map((r) => Number(r.id)))})
        order by transfer_id, id`),
    );
    const historyOf = new Map<number, TransferHistoryEntry[]>();
    for (const h of history) {
      const list = historyOf.get(Number(h.transfer_id)) ?? [];
      list.push({
        at: new Date(Number(h.at)),
        status: h.status,
        hostId: h.host_id,
        sent: Number(h.sent),
        comment: h.comment,
        error: h.error,
      });
      historyOf.set(Number(h.transfer_id), list);
    }
    return rows.map((r) => ({
      id: Number(r.id),
      dataFileId: Number(r.data_file_id),
      destination: r.destination,
      target: r.target,
      uniqueName: r.unique_name,
      status: r.status,
      priority: Number(r.priority),
      scheduledAt: new Date(Number(r.scheduled_at)),
      expiresAt: new Date(Number(r.expires_at)),
      message: r.message,
      source: r.source,
      md5: r.checksum,
      sha512: r.sha512,
      size: Number(r.size),
      updatedAt: new Date(Number(r.updated_at)),
      history: historyOf.get(Number(r.id)) ?? [],
    }));
  },

  async sentPerHour(destination, since) {
    const rows = rowsOf<{ hour: number; bytes: number | string; files: number }>(
      await db.execute(sql`
        select ${ms(sql`date_trunc('hour', at at time zone 'UTC') at time zone 'UTC'`)} as hour,
          sum(sent)::float8 as bytes, count(*)::int as files
        from transfer_history
        where destination = ${destination} and status = 'DONE' and at >= ${since.toISOString()}::timestamptz
        group by 1 order by 1`),
    );
    return rows.map((r) => ({ hour: new Date(Number(r.hour)), bytes: Number(r.bytes), files: Number(r.files) }));
  },
});
