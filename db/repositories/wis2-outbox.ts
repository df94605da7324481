import { inArray, type SQL, sql } from 'drizzle-orm';
import type { NotificationKind } from '../../core/wis2/message.ts';
import type { OutboxItem, Wis2OutboxRepo } from '../../core/wis2/ports.ts';
import { type Database, rowsOf } from '../client.ts';
import { wis2Outbox } from '../schema.ts';

/**
 * Whether a destination's options text (`data`) has a `wis2.topic` line: only such destinations
 * get outbox rows. The publisher reads the options properly (core/wis2/options.ts) and drops a row
 * whose destination turns out to have no usable topic.
 */
export const mentionsWis2Topic = (data: SQL) => sql`${data} ~ ${'(^|\\n)[ \\t]*wis2[ \\t]*\\.[ \\t]*topic[ \\t]*='}`;

/**
 * One statement: an outbox row of `kind` announcing the transfer, when its destination has a topic,
 * and the transfer marked announced (its expiry is then announced too). `before` adds common table
 * expressions that `kind` may read.
 */
export function announceTransfer(
  t: { dataFileId: number; transferId: number; destination: string; target: string },
  kind: SQL,
  notBefore: SQL,
  before: SQL = sql``,
) {
  return sql`
    with ${before} notice as (
      insert into wis2_outbox (data_file_id, transfer_id, destination, target, kind, not_before)
      select ${t.dataFileId}, ${t.transferId}, d.name, ${t.target}, ${kind}, ${notBefore}
      from destinations d where d.name = ${t.destination} and ${mentionsWis2Topic(sql`d.data`)}
      returning transfer_id
    )
    update data_transfers set wis2_announced = true where id in (select transfer_id from notice)`;
}

/** What a transfer shows in the portal's tree (db/repositories/portal-tree.ts), judged at `at`. */
export const listedAt = (t: SQL, at: string) => sql`${t}.status not in ('INIT', 'SCHE', 'FETC')
  and ${t}.scheduled_at <= ${at}::timestamptz and ${t}.expires_at > ${at}::timestamptz`;

type ItemRow = {
  id: string | number;
  message_id: string;
  kind: NotificationKind;
  data_file_id: string | number;
  destination: string;
  target: string;
  not_before: string | Date;
  attempts: number;
  source: string;
  size: string | number;
  created_at: string | Date;
  deleted_at: string | Date | null;
  sha512: string | null;
  object_key: string | null;
  stored_size: string | number | null;
  stored_sha512: string | null;
  data: string | null;
  open_access_user: string | null;
};

const toItem = (r: ItemRow): OutboxItem => ({
  id: Number(r.id),
  messageId: r.message_id,
  kind: r.kind,
  dataFileId: Number(r.data_file_id),
  destination: r.destination,
  target: r.target,
  notBefore: new Date(r.not_before),
  attempts: r.attempts,
  file: {
    source: r.source,
    size: Number(r.size),
    registeredAt: new Date(r.created_at),
    deletedAt: r.deleted_at === null ? null : new Date(r.deleted_at),
    sha512: r.sha512,
    stored:
      r.object_key === null || r.stored_sha512 === null
        ? null
        : { key: r.object_key, size: Number(r.stored_size), sha512: r.stored_sha512 },
  },
  destinationData: r.data,
  openAccessUser: r.open_access_user,
});

/** The advisory lock space of the outbox's claims (its table came with migration 0019). */
const OUTBOX_LOCKS = 7019;

export const wis2OutboxRepo = (db: Database): Wis2OutboxRepo => ({
  async claim(now, until, limit, newId) {
    const at = now.toISOString();
    const claimed = await db.transaction(async (tx) => {
      // One claim at a time across publishers: each sees what the others hold.
      await tx.execute(sql`select pg_advisory_xact_lock(${OUTBOX_LOCKS}::int, 0)`);
      // A destination's rows go in order: none is taken while an earlier one is held by a publisher
      // (one put off because its source could not be read comes late anyway, and holds up nothing).
      const due = rowsOf<{ id: string | number; message_id: string | null }>(
        await tx.execute(sql`
          with held as materialized (
            select destination, not_before, id from wis2_outbox
            where done_at is null and last_error is null and claimed_until > ${at}::timestamptz)
          select o.id, o.message_id from wis2_outbox o
          where o.done_at is null and o.not_before <= ${at}::timestamptz
            and (o.claimed_until is null or o.claimed_until <= ${at}::timestamptz)
            -- A file's notice waits for its retrieval: it announces the stored copy's sums and version.
            and (o.kind = 'deletion' or not exists (
              select 1 from data_transfers t where t.id = o.transfer_id and t.status in ('SCHE', 'FETC')))
            and not exists (
              select 1 from held h
              where h.destination = o.destination and (h.not_before, h.id) < (o.not_before, o.id))
          order by o.not_before, o.id
          limit ${limit}`),
      );
      if (due.length === 0) return [];
      const given = due.map((r) => ({ id: Number(r.id), message_id: r.message_id ?? newId() }));
      await tx.execute(sql`
        update wis2_outbox o set claimed_until = ${until.toISOString()}::timestamptz, message_id = g.message_id
        from jsonb_to_recordset(${JSON.stringify(given)}::jsonb) as g(id bigint, message_id text)
        where o.id = g.id`);
      return given.map((g) => g.id);
    });
    if (claimed.length === 0) return [];
    const rows = rowsOf<ItemRow>(
      await db.execute(sql`
        select o.id, o.message_id, o.kind, o.data_file_id, o.destination, o.target, o.not_before, o.attempts,
          f.source, f.size, f.created_at, f.deleted_at, f.sha512, f.object_key, s.size as stored_size,
          s.sha512 as stored_sha512, d.data,
          (select u.id from incoming_associations a join incoming_users u on u.id = a.user_id
            where a.destination = o.destination and u.active and u.portal_service = 'open-access'
            order by u.id collate "C" limit 1) as open_access_user
        from wis2_outbox o join data_files f on f.id = o.data_file_id
          left join stored_objects s on s.key = f.object_key
          left join destinations d on d.name = o.destination
        where o.id in (select (jsonb_array_elements_text(${JSON.stringify(claimed)}::jsonb))::bigint)
        order by o.not_before, o.id`),
    );
    return rows.map(toItem);
  },
  async finish(ids, outcome, at) {
    if (ids.length === 0) return;
    await db
      .update(wis2Outbox)
      .set({ doneAt: at, outcome, claimedUntil: null })
      .where(inArray(wis2Outbox.id, [...ids]));
  },
  async release(ids) {
    if (ids.length === 0) return;
    await db
      .update(wis2Outbox)
      .set({ claimedUntil: null })
      .where(inArray(wis2Outbox.id, [...ids]));
  },
  async postpone(id, until, error) {
    await db.execute(sql`
      update wis2_outbox set claimed_until = ${until.toISOString()}::timestamptz, attempts = attempts + 1,
        last_error = ${error.slice(0, 1000)}
      where id = ${id}`);
  },
  async prune(before) {
    const rows = await db
      .delete(wis2Outbox)
      .where(sql`${wis2Outbox.doneAt} < ${before.toISOString()}::timestamptz`)
      .returning({ id: wis2Outbox.id });
    return rows.length;
  },
  async rememberSha512(dataFileId, rowId, sha512) {
    // A forced put given the file a new source since this row was written leaves an `update` row
    // behind it: the digest read may be the old source's, and is not kept.
    await db.execute(sql`
      update data_files set sha512 = ${sha512}
      where id = ${dataFileId} and not exists (
        select 1 from wis2_outbox where data_file_id = ${dataFileId} and id > ${rowId} and kind = 'update')`);
  },
});
