import { and, eq, isNull, ne, sql } from 'drizzle-orm';
import type { DataFileRepo, FetchBy, NewTransfer, RegisteredFile } from '../../core/data-files/ports.ts';
import { type Database, rowsOf } from '../client.ts';
import { executePrepared } from '../prepared.ts';
import { dataFiles, dataTransfers, transferHistory } from '../schema.ts';
import { dataFilePutRepo } from './data-file-puts.ts';
import { requeueIn, startingStatus } from './data-file-requeue.ts';
import { startingRetrieval } from './retrieval.ts';
import { interruption } from './transfers.ts';
import { listedAt, mentionsWis2Topic, notifies, ORIGIN_COLUMNS, originValues } from './wis2-outbox.ts';

// A raw row as the drivers give it: bigint columns may come as text, converted below.
type ExpiredRow = {
  transfer_id: string | number;
  destination: string;
  destination_type: string;
  target: string;
  size: string | number;
  scheduled_at: string | Date;
  network: string | null;
};

const LIVE = sql`${dataTransfers.status} not in ('STOP', 'FAIL')`;
// The columns register fills, in the order of its select.
const TRANSFER_COLUMNS = sql.raw(
  'data_file_id, destination, target, unique_name, priority, status, ready_status, standby, scheduled_at, queue_at, ' +
    'expires_at, metadata, wis2_announced',
);

type RegisterRow = {
  found: boolean;
  id: string | number | null;
  instance: number | null;
  fetch_tries: number | null;
  source_host: boolean | null;
};

/**
 * One statement, so one round trip: it finds the destination, the transfer takes the file's id from
 * the sequence, the partial unique index decides between concurrent puts of the same key, and the file
 * row is written only when the transfer was. The sequence is named as in the column's default: looking
 * it up with pg_get_serial_sequence cost a tenth of the statement. With `fetchBy`, the file is claimed
 * for that retriever in the same statement, as its claim would (FETC, with its history and lease).
 */
function registerStatement(file: RegisteredFile, transfer: NewTransfer, fetchBy?: FetchBy) {
  const scheduledAt = transfer.scheduledAt.toISOString();
  const { status, readyStatus } = startingStatus(file, transfer.status);
  const fetching = fetchBy ? sql`'FETC'` : sql`${status}`;
  const fetchHistory = fetchBy
    ? sql`union all select id, destination, 'FETC', now(), ${startingRetrieval(fetchBy.mover)}
        from transfer`
    : sql``;
  return sql`
      with destination as (
        select name, data, host_for_source_name from destinations where name = ${transfer.destination}
      ), transfer as (
        insert into data_transfers (${TRANSFER_COLUMNS})
        select nextval('data_files_id_seq'::regclass), name, ${transfer.target}, ${transfer.uniqueName},
          ${transfer.priority}, ${fetching}, ${readyStatus}, ${transfer.standby}, ${scheduledAt}::timestamptz,
          ${(transfer.queueAt ?? transfer.scheduledAt).toISOString()}::timestamptz,
          ${transfer.expiresAt.toISOString()}::timestamptz, ${JSON.stringify(transfer.metadata)}::jsonb,
          ${mentionsWis2Topic(sql`data`)}
        from destination
        on conflict (destination, target, unique_name) where status not in ('STOP', 'FAIL') do nothing
        returning id, data_file_id, destination
      ), history as (
        insert into transfer_history (transfer_id, destination, status, at, comment)
        select id, destination, ${status}, now(), ${file.comment} from transfer
        ${fetchHistory}
      ), file as (
        insert into data_files (id, source, size, registered_by, fetch_mover, fetch_tries, fetch_lease_until,
          acquired_from, source_time)
        select data_file_id, ${file.source}, ${file.size}, ${file.registeredBy}, ${fetchBy?.mover ?? null}::text,
          ${fetchBy ? 1 : 0}, now() + ${fetchBy?.leaseMs ?? null}::float8 * interval '1 millisecond',
          ${file.acquiredFrom?.hostId ?? null}::bigint, ${file.acquiredFrom?.time?.toISOString() ?? null}::timestamptz
        from transfer
        returning id, instance, fetch_tries
      ), notice as (
        insert into wis2_outbox (data_file_id, transfer_id, destination, target, kind, not_before, ${ORIGIN_COLUMNS})
        select t.data_file_id, t.id, t.destination, ${transfer.target}, 'new', ${scheduledAt}::timestamptz,
          ${originValues(file.acquiredFrom?.notice)}
        from transfer t, destination d where ${notifies(sql`d.data`, file.acquiredFrom?.notice)}
      )
      select exists (select 1 from destination) as found, f.id, f.instance, f.fetch_tries,
        (select coalesce(host_for_source_name, '') <> '' from destination) as source_host
      from (select 1) one left join file f on true`;
}

export const dataFileRepo = (db: Database): DataFileRepo => ({
  async register(file, transfer) {
    const [row] = rowsOf<RegisterRow>(await executePrepared(db, registerStatement(file, transfer), 'dataFileRegister'));
    if (!row?.found) return 'no destination';
    return row.id === null ? 'taken' : Number(row.id);
  },
  async registerFetched(file, transfer, fetchBy) {
    const statement = registerStatement(file, transfer, fetchBy);
    const [row] = rowsOf<RegisterRow>(await executePrepared(db, statement, 'dataFileRegisterFetched'));
    if (!row?.found) return 'no destination';
    if (row.id === null) return 'taken';
    return {
      dataFileId: Number(row.id),
      instance: Number(row.instance),
      tries: Number(row.fetch_tries),
      source: file.source,
      size: file.size,
      destination: transfer.destination,
      sourceHostNamed: Boolean(row.source_host),
      acquiredFrom: file.acquiredFrom?.hostId ?? null,
    };
  },
  async findLive(destination, target, uniqueName) {
    const [row] = await db
      .select({ transferId: dataTransfers.id, dataFileId: dataTransfers.dataFileId })
      .from(dataTransfers)
      .where(
        and(
          eq(dataTransfers.destination, destination),
          eq(dataTransfers.target, target),
          eq(dataTransfers.uniqueName, uniqueName),
          LIVE,
        ),
      );
    return row ?? null;
  },
  async requeue(transferId, file, transfer) {
    await db.transaction((tx) => requeueIn(tx, transferId, file, transfer));
  },
  ...dataFilePutRepo(db),
  async find(id) {
    const [row] = await db
      .select({ id: dataFiles.id, size: dataFiles.size, deletedAt: dataFiles.deletedAt })
      .from(dataFiles)
      .where(eq(dataFiles.id, id));
    return row ?? null;
  },
  async markDeleted(id, at) {
    return db.transaction(async (tx) => {
      const deleted = await tx
        .update(dataFiles)
        .set({ deletedAt: at })
        .where(and(eq(dataFiles.id, id), isNull(dataFiles.deletedAt)))
        .returning({ id: dataFiles.id });
      const notices = deleted.length > 0 ? await noticeDeletion(tx, id, at) : 0;
      const live = and(eq(dataTransfers.dataFileId, id), ne(dataTransfers.status, 'STOP'));
      const before = await tx
        .select({ transferId: dataTransfers.id, destination: dataTransfers.destination, status: dataTransfers.status })
        .from(dataTransfers)
        .where(live)
        .for('update');
      await tx.update(dataTransfers).set({ status: 'STOP', updatedAt: at }).where(live);
      const comment = 'Data file deleted';
      const rows = before.flatMap(({ status, ...t }) => [
        ...interruption(status, { ...t, at }, comment),
        { ...t, at, status: 'STOP', comment },
      ]);
      if (rows.length) await tx.insert(transferHistory).values(rows);
      return notices;
    });
  },
  async noticeExpired(now) {
    // The portal stops listing a transfer at its expiry time without any write (portal-tree.ts): the
    // deletion of each announced one is told here once, in the statement that clears its mark.
    const at = now.toISOString();
    const rows = await db.execute(sql`
      with expired as (
        update data_transfers set wis2_announced = false
        where wis2_announced and expires_at <= ${at}::timestamptz
        returning id, data_file_id, destination, target, status, scheduled_at, expires_at
      )
      insert into wis2_outbox (data_file_id, transfer_id, destination, target, kind, not_before)
      select e.data_file_id, e.id, e.destination, e.target, 'deletion', ${at}::timestamptz
      from expired e join destinations d on d.name = e.destination join data_files f on f.id = e.data_file_id
      where ${mentionsWis2Topic(sql`d.data`)} and f.deleted_at is null
        and e.status not in ('INIT', 'SCHE', 'FETC', 'HOLD') and e.scheduled_at < e.expires_at
      returning id`);
    return rowsOf(rows).length;
  },
  async expire(now, message) {
    // A transfer being sent is never expired (as in the reference): its attempt decides how it ends.
    // The first condition is the expiry index's own, so that the planner can use it.
    // Raw SQL parameters carry no column type, so times go as ISO text with an explicit cast.
    const rows = await db.execute(sql`
      with expired as (
        update data_transfers set status = 'FAIL', message = ${message}, updated_at = ${now.toISOString()}::timestamptz
        where status not in ('DONE', 'FAIL', 'STOP') and status <> 'EXEC'
          and expires_at < ${now.toISOString()}::timestamptz
        returning id, data_file_id, destination, target, scheduled_at
      ), history as (
        insert into transfer_history (transfer_id, destination, status, at, comment, error)
        select id, destination, 'FAIL', ${now.toISOString()}::timestamptz, ${message}, true from expired
      )
      select e.id as transfer_id, e.destination, coalesce(t.label, d.type::text) as destination_type, e.target, f.size,
        e.scheduled_at,
        (select coalesce(h.network_name, h.network_code) from destination_hosts dh join hosts h on h.hostid = dh.hostid
          where dh.destination = e.destination order by dh.priority, h.hostid limit 1) as network
      from expired e join data_files f on f.id = e.data_file_id join destinations d on d.name = e.destination
        left join destination_types t on t.id = d.type
      order by e.id`);
    return rowsOf<ExpiredRow>(rows).map((r) => ({
      transferId: Number(r.transfer_id),
      destination: r.destination,
      destinationType: r.destination_type,
      target: r.target,
      size: Number(r.size),
      scheduledAt: new Date(r.scheduled_at),
      network: r.network ?? null,
    }));
  },
});

type Tx = Parameters<Parameters<Database['transaction']>[0]>[0];

/**
 * The WIS2 notifications of a deleted file, in its transaction: a deletion for each of its
 * transfers the portal showed to all; the notices of those it did not show yet (queued for later,
 * or held: an upload before its release) are withdrawn.
 */
async function noticeDeletion(tx: Tx, dataFileId: number, at: Date): Promise<number> {
  const now = at.toISOString();
  const rows = await tx.execute(sql`
    with withdrawn as (
      delete from wis2_outbox o
      where o.data_file_id = ${dataFileId} and o.done_at is null and (o.not_before > ${now}::timestamptz
        or exists (select 1 from data_transfers t where t.id = o.transfer_id and t.status = 'HOLD'))
    ), told as (
      update data_transfers set wis2_announced = false where data_file_id = ${dataFileId} and wis2_announced
    )
    insert into wis2_outbox (data_file_id, transfer_id, destination, target, kind, not_before)
    select t.data_file_id, t.id, t.destination, t.target, 'deletion', ${now}::timestamptz
    from data_transfers t join destinations d on d.name = t.destination
    where t.data_file_id = ${dataFileId} and ${listedAt(sql`t`, now)} and t.status <> 'HOLD'
      and ${mentionsWis2Topic(sql`d.data`)}
    returning id`);
  return rowsOf(rows).length;
}
