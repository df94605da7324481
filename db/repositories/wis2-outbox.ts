import { inArray, type SQL, sql } from 'drizzle-orm';
import type { NotificationKind } from '../../core/wis2/message.ts';
import type { OutboxItem, ReceivedMessage, Wis2OutboxRepo } from '../../core/wis2/ports.ts';
import { type Database, inTurn, jsonColumn, rowsOf } from '../client.ts';
import { wis2Outbox } from '../schema.ts';

/**
 * Whether a destination's options text (`data`) has a `wis2.topic` line: only such destinations
 * get outbox rows. The publisher reads the options properly (core/wis2/options.ts) and drops a row
 * whose destination turns out to have no usable topic.
 */
export const mentionsWis2Topic = (data: SQL) => mentionsWis2Option(data, 'topic');

/** Whether an options text has a `wis2.<key>` line (spaces allowed around the dot and the `=`). */
const mentionsWis2Option = (data: SQL, key: string) =>
  sql`${data} ~ ${`(^|\\n)[ \\t]*wis2[ \\t]*\\.[ \\t]*${key}[ \\t]*=`}`;

/**
 * Whether a destination gets an outbox row for a file: it has a topic, or the file came by a WIS2 message
 * (`origin`) and the destination is a Global Cache. The statement's text is the same either way.
 */
export const notifies = (data: SQL, origin: ReceivedMessage | undefined) => {
  const globalCache = mentionsWis2Option(data, 'globalCache');
  return sql`(${mentionsWis2Topic(data)} or (${origin?.topic ?? null}::text is not null and ${globalCache}))`;
};

export const ORIGIN_COLUMNS = sql.raw('origin_topic, origin_message');
export const originValues = (origin: ReceivedMessage | undefined) =>
  sql`${origin?.topic ?? null}::text, ${origin ? JSON.stringify(origin.message) : null}::jsonb`;

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
  origin?: ReceivedMessage,
) {
  return sql`
    with ${before} notice as (
      insert into wis2_outbox (data_file_id, transfer_id, destination, target, kind, not_before, ${ORIGIN_COLUMNS})
      select ${t.dataFileId}, ${t.transferId}, d.name, ${t.target}, ${kind}, ${notBefore}, ${originValues(origin)}
      from destinations d where d.name = ${t.destination} and ${notifies(sql`d.data`, origin)}
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
  data_file_id: string | number | null;
  destination: string;
  target: string;
  not_before: string | Date;
  attempts: number;
  origin_topic: string | null;
  origin_message: unknown;
  metadata: unknown;
  source: string | null;
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
  dataFileId: r.data_file_id === null ? null : Number(r.data_file_id),
  destination: r.destination,
  target: r.target,
  notBefore: new Date(r.not_before),
  attempts: r.attempts,
  origin:
    r.origin_topic === null
      ? null
      : { topic: r.origin_topic, message: jsonColumn<Record<string, unknown>>(r.origin_message) },
  file:
    r.source === null
      ? null
      : {
          source: r.source,
          size: Number(r.size),
          registeredAt: new Date(r.created_at),
          deletedAt: r.deleted_at === null ? null : new Date(r.deleted_at),
          metadata: jsonColumn<Array<[string, string]> | null>(r.metadata) ?? [],
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
    // One claim at a time across publishers: each sees what the others hold.
    const claimed = await inTurn(db, OUTBOX_LOCKS, async (tx) => {
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
            -- A file's notice waits for its retrieval (it announces the stored copy's sums and version) and
            -- for its release from HOLD (the portal shows a held upload to its uploader only).
            and (o.kind = 'deletion' or not exists (
              select 1 from data_transfers t where t.id = o.transfer_id and t.status in ('SCHE', 'FETC', 'HOLD')))
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
          o.origin_topic, o.origin_message, t.metadata, f.source, f.size, f.created_at, f.deleted_at, f.sha512,
          f.object_key, s.size as stored_size,
          s.sha512 as stored_sha512, d.data,
          (select u.id from incoming_associations a join incoming_users u on u.id = a.user_id
            where a.destination = o.destination and u.active and u.portal_service = 'open-access'
            order by u.id collate "C" limit 1) as open_access_user
        from wis2_outbox o left join data_files f on f.id = o.data_file_id
          left join data_transfers t on t.id = o.transfer_id
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
  async hold(id, until, reason) {
    // The reason goes where an operator reads outcomes; last_error stays empty, so that the row still
    // counts as held by a publisher and its destination's later rows wait behind it.
    await db.execute(sql`
      update wis2_outbox set claimed_until = ${until.toISOString()}::timestamptz, attempts = attempts + 1,
        outcome = ${reason}, last_error = null
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
