import { sql } from 'drizzle-orm';
import type { RetrievalClaim, RetrievalRepo, RetrievedTransfer, SourceHost } from '../../core/retrieval/ports.ts';
import { type Database, rowsOf } from '../client.ts';
import { executePrepared, literalLimit } from '../prepared.ts';

type ClaimRow = {
  id: string | number;
  instance: number;
  fetch_tries: number;
  source: string;
  size: string | number;
  destination: string;
  source_host: boolean;
  acquired_from: string | number | null;
};

type TransferRow = {
  id: string | number;
  destination: string;
  destination_type: string;
  target: string;
  scheduled_at: string | Date;
  status: string;
};

/** Whether the retriever still holds the file's current instance: what every finish checks first. */
/** The history comment of a retrieval's start. */
export const startingRetrieval = (mover: string) => `Starting retrieval using DataMover=${mover}`;

const held = (claim: RetrievalClaim, mover: string) =>
  sql`id = ${claim.dataFileId} and fetch_mover = ${mover} and fetch_tries = ${claim.tries}
    and instance = ${claim.instance}`;

/** The transfers a statement's `moved` answers, with their destination's type, as the event lines need them. */
const movedWithType = sql`
  select m.*, coalesce(dt.label, d.type::text) as destination_type
  from moved m join destinations d on d.name = m.destination left join destination_types dt on dt.id = d.type`;

/** Puts the `owned` file's transfers under retrieval back to SCHE, with the reason in their history; answers them. */
const requeued = (reason: string) => sql`
  moved as (
    update data_transfers t set status = 'SCHE', message = ${reason}, updated_at = now()
    where t.data_file_id in (select id from owned) and t.status = 'FETC'
    returning t.id, t.destination, t.target, t.scheduled_at, t.status
  ), history as (
    insert into transfer_history (transfer_id, destination, status, at, comment, error)
    select id, destination, status, now(), ${reason}, true from moved
  )
  select * from (${movedWithType}) r order by r.id`;

const transfersOf = (rows: unknown): RetrievedTransfer[] =>
  rowsOf<TransferRow>(rows).map((r) => ({
    transferId: Number(r.id),
    destination: r.destination,
    destinationType: r.destination_type,
    target: r.target,
    scheduledAt: new Date(r.scheduled_at),
    status: r.status,
  }));

type SourceHostRow = {
  name: string;
  hostid: string | number | null;
  module: string | null;
  host: string | null;
  login: string | null;
  passwd_sealed: string | null;
  dir: string | null;
  data: string;
  active: boolean | null;
  filter_name: string | null;
};

/** The columns of a host that sourceHostOfRow reads, from `hosts h` and `transfer_methods m`. */
export const HOST_COLUMNS = sql`h.hostid, m.ectrans_module_name as module, h.host, h.login, h.passwd_sealed, h.dir,
  h.data, h.active, h.filter_name`;

export type HostRow = Omit<SourceHostRow, 'name'> & { hostid: string | number };

export const sourceHostOfRow = (r: HostRow): SourceHost => ({
  hostId: String(r.hostid),
  module: r.module,
  host: r.host ?? '',
  login: r.login ?? '',
  passwdSealed: r.passwd_sealed,
  dir: r.dir ?? '',
  data: r.data,
  maxConnections: null,
  retryCount: null,
  retryFrequency: null,
  network: null,
  filterName: r.filter_name,
  active: r.active !== false,
});

export const retrievalRepo = (db: Database): RetrievalRepo => ({
  async sourceHostOf(destination) {
    const rows = rowsOf<SourceHostRow>(
      await db.execute(sql`
        select d.host_for_source_name as name, ${HOST_COLUMNS}
        from destinations d
        left join hosts h on h.hostid =
          case when d.host_for_source_name ~ '^[0-9]{1,18}$' then d.host_for_source_name::bigint end
        left join transfer_methods m on m.name = h.transfer_method_name
        where d.name = ${destination} and coalesce(d.host_for_source_name, '') <> ''`),
    );
    const r = rows[0];
    if (!r) return null;
    const { hostid } = r;
    return { name: r.name, host: hostid === null ? null : sourceHostOfRow({ ...r, hostid }) };
  },
  async hostById(hostId) {
    const rows = rowsOf<SourceHostRow>(
      await db.execute(sql`
        select ${HOST_COLUMNS} from hosts h
        left join transfer_methods m on m.name = h.transfer_method_name
        where h.hostid = ${hostId}`),
    );
    const r = rows[0];
    return r && r.hostid !== null ? sourceHostOfRow({ ...r, hostid: r.hostid }) : null;
  },
  async claim(mover, leaseMs, limit) {
    // The scan walks the retrieval index in urgency order and skips, by their file, those held by a
    // live lease or waiting after a failure: a backlog of failing files does not hide the others.
    // The file is checked in a subquery, never joined: a join let the planner, on statistics older
    // than a burst of puts, probe the index once per data file, a cost growing with the table.
    // Its limits are written into its text (see literalLimit).
    const rows = await executePrepared(
      db,
      sql`
      with candidates as (
        select distinct c.data_file_id from (
          select t.data_file_id from data_transfers t
          where t.status in ('SCHE', 'FETC') and t.expires_at > now()
            and (select f.deleted_at is null and (f.fetch_at is null or f.fetch_at <= now())
                   and (f.fetch_mover is null or f.fetch_lease_until < now())
                 from data_files f where f.id = t.data_file_id)
          order by t.priority, t.queue_at
          limit ${literalLimit(limit * 4)}
        ) c
      ), picked as (
        select f.id from data_files f join candidates c on c.data_file_id = f.id
        where f.deleted_at is null and (f.fetch_mover is null or f.fetch_lease_until < now())
        limit ${literalLimit(limit)}
        for update of f skip locked
      ), claimed as (
        update data_files f set fetch_mover = ${mover}, fetch_tries = f.fetch_tries + 1,
          fetch_lease_until = now() + ${leaseMs} * interval '1 millisecond'
        from picked where f.id = picked.id
        returning f.id, f.instance, f.fetch_tries, f.source, f.size, f.acquired_from
      ), moved as (
        update data_transfers t set status = 'FETC', updated_at = now()
        from claimed c where t.data_file_id = c.id and t.status = 'SCHE'
        returning t.id, t.destination
      ), history as (
        insert into transfer_history (transfer_id, destination, status, at, comment)
        select id, destination, 'FETC', now(), ${startingRetrieval(mover)} from moved
      )
      select c.id, c.instance, c.fetch_tries, c.source, c.size, c.acquired_from, first.destination,
        coalesce(d.host_for_source_name, '') <> '' as source_host
      from claimed c
      left join lateral (
        select t.destination from data_transfers t where t.data_file_id = c.id order by t.id limit 1
      ) first on true
      left join destinations d on d.name = first.destination`,
      'retrievalClaim',
    );
    return rowsOf<ClaimRow>(rows).map((r) => ({
      dataFileId: Number(r.id),
      instance: Number(r.instance),
      tries: Number(r.fetch_tries),
      source: r.source,
      size: Number(r.size),
      destination: r.destination,
      sourceHostNamed: Boolean(r.source_host),
      acquiredFrom: r.acquired_from === null ? null : Number(r.acquired_from),
    }));
  },
  async renew(mover, leaseMs, files) {
    if (files.length === 0) return [];
    const pairs = sql.join(
      files.map((f) => sql`(${f.dataFileId}::bigint, ${f.tries}::int)`),
      sql`, `,
    );
    const rows = await db.execute(sql`
      update data_files set fetch_lease_until = now() + ${leaseMs} * interval '1 millisecond'
      where fetch_mover = ${mover} and (id, fetch_tries) in (${pairs})
      returning id`);
    return rowsOf<{ id: string | number }>(rows).map((r) => Number(r.id));
  },
  async stored(records) {
    if (records.length === 0) return [];
    // One statement for all the records given: each recorded whole or not at all, and the retrieval of small
    // files shares its round trips. Its parts share one snapshot, so the copies inserted are not among those
    // superseded.
    const values = sql.join(
      records.map(
        ({ claim, mover, copy, comment }) =>
          sql`(${claim.dataFileId}::bigint, ${claim.tries}::int, ${claim.instance}::int, ${mover}::text,
            ${copy.key}::text, ${copy.size}::bigint, ${copy.md5}::text, ${copy.sha512}::text, ${comment}::text)`,
      ),
      sql`, `,
    );
    const rows = await executePrepared(
      db,
      sql`
      with records (id, tries, instance, mover, key, size, md5, sha512, comment) as (values ${values}),
      owned as (
        update data_files f set object_key = r.key, checksum = r.md5, sha512 = r.sha512, retrieved_at = now(),
          fetch_mover = null, fetch_lease_until = null, fetch_at = null
        from records r
        where f.id = r.id and f.fetch_mover = r.mover and f.fetch_tries = r.tries and f.instance = r.instance
          and f.deleted_at is null
        returning f.id, r.instance, r.key, r.size, r.md5, r.sha512, r.comment
      ), superseded as (
        -- The earlier instances' copies stay for the links that announced them, until their time is up.
        update stored_objects set superseded_at = now()
        where data_file_id in (select id from owned) and superseded_at is null
      ), copied as (
        insert into stored_objects (key, data_file_id, instance, size, md5, sha512)
        select key, id, instance, size, md5, sha512 from owned
      ), moved as (
        update data_transfers t set status = coalesce(t.ready_status, 'WAIT'), ready_status = null, message = null,
          updated_at = now()
        from owned o where t.data_file_id = o.id and t.status in ('SCHE', 'FETC')
        returning t.id, t.data_file_id, t.destination, t.target, t.scheduled_at, t.status, o.comment
      ), history as (
        insert into transfer_history (transfer_id, destination, status, at, comment, error)
        select id, destination, status, now(), comment, false from moved
      )
      select o.id as data_file_id, r.id, r.destination, r.destination_type, r.target, r.scheduled_at, r.status
      from owned o
      left join (${movedWithType}) r on r.data_file_id = o.id
      order by o.id, r.id`,
      'retrievalStored',
    );
    const released = new Map<number, TransferRow[]>();
    for (const row of rowsOf<TransferRow & { data_file_id: string | number }>(rows)) {
      const transfers = released.get(Number(row.data_file_id)) ?? [];
      if (row.id !== null) transfers.push(row);
      released.set(Number(row.data_file_id), transfers);
    }
    return records.map(({ claim }) => {
      const transfers = released.get(claim.dataFileId);
      return transfers ? transfersOf(transfers) : null;
    });
  },
  async failed(claim, mover, reason, retryInMs) {
    return db.transaction(async (tx) => {
      const owned = await tx.execute(sql`
        update data_files set fetch_mover = null, fetch_lease_until = null,
          fetch_at = now() + ${retryInMs} * interval '1 millisecond'
        where ${held(claim, mover)}
        returning id`);
      if (rowsOf(owned).length === 0) return null;
      const moved = await tx.execute(sql`
        with owned as (select ${claim.dataFileId}::bigint as id), ${requeued(reason)}`);
      return transfersOf(moved);
    });
  },
  async refetch(lost) {
    return db.transaction(async (tx) => {
      const [file] = rowsOf<{ object_key: string | null }>(
        await tx.execute(sql`
          select object_key from data_files where id = ${lost.dataFileId} and deleted_at is null for update`),
      );
      // Another mover that found the same copy lost may have put the file back already.
      if (!file || (file.object_key !== null && file.object_key !== lost.objectKey)) return false;
      // Nothing moves unless the attempt is still the mover's: a stale one must not requeue the others.
      const moved = await tx.execute(sql`
        with mine as (
          select id from data_transfers
          where id = ${lost.transferId} and status = 'EXEC' and mover = ${lost.mover} and attempt = ${lost.attempt}
        ), moved as (
          update data_transfers t set status = 'SCHE',
            ready_status = case when t.status = 'HOLD' then 'HOLD' else 'WAIT' end,
            message = ${lost.reason}, mover = null, lease_until = null, updated_at = now()
          where exists (select 1 from mine) and t.data_file_id = ${lost.dataFileId} and (
            (t.status in ('WAIT', 'RETR', 'INTR', 'HOLD') and t.mover is null) or t.id in (select id from mine))
          returning t.id, t.destination, t.host_id
        ), history as (
          insert into transfer_history (transfer_id, destination, host_id, status, at, comment, error)
          select id, destination, host_id, 'SCHE', now(), ${lost.reason}, true from moved
        )
        select count(*)::int as n from moved`);
      if (Number(rowsOf<{ n: number }>(moved)[0]?.n ?? 0) === 0) return false;
      // fetch_tries goes on counting: the next object's key must not be the lost one's.
      await tx.execute(sql`
        update data_files set object_key = null, retrieved_at = null, fetch_mover = null, fetch_lease_until = null,
          fetch_at = null
        where id = ${lost.dataFileId}`);
      return true;
    });
  },
});
