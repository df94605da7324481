import { type SQL, sql } from 'drizzle-orm';
import type { MailKind } from '../../core/notifications/policy.ts';
import type { ClaimedGroup, MailOutboxRepo } from '../../core/notifications/ports.ts';
import { type Database, inTurn, rowsOf } from '../client.ts';

/**
 * The conditions under which the event statements write mail rows (core/notifications/policy.ts says which
 * option asks for which mail). Each is a join on a row the statement reads by its key and a condition on it:
 * with no mail option on, no row is written and nothing else is read.
 */

/** An address column's mail recipient, or null when it has none. */
export const recipientOf = (column: SQL) => sql`nullif(btrim(${column}), '')`;

/** A host's mails go to its own address, or else to its destination's (`h` and `d` in the statement). */
const hostRecipient = sql`coalesce(${recipientOf(sql`h.user_mail`)}, ${recipientOf(sql`d.user_mail`)})`;

/** A transfer's `host_id` (text) as the key of `hosts`, so that the join goes through the key's index. */
const hostKey = (hostId: SQL) => sql`case when ${hostId} ~ '^[0-9]{1,18}$' then ${hostId}::bigint end`;

// Each row's destination and host read through their keys: lateral subqueries kept apart by `offset 0` leave
// the planner no join to choose, which on tables never analyzed may be a scan of every destination or host.
const destinationOf = (name: SQL) => sql`cross join lateral (
  select d.name, d.user_mail, d.mail_on_start, d.mail_on_end, d.mail_on_error from destinations d
  where d.name = ${name} offset 0) d`;
const hostOf = (hostId: SQL) => sql`lateral (
  select h.hostid, h.user_mail, h.mail_on_error, h.mail_on_success, h.notify_once from hosts h
  where h.hostid = ${hostKey(hostId)} offset 0) h`;

/**
 * The `start` rows of transfers just claimed (mailOnStart): `claimed` is the statement's relation of them
 * (id, destination, target) and `hostId` the host they go to. A statement of its own in a `with` list.
 */
export const startMails = (claimed: SQL, hostId: SQL) => sql`
  insert into mail_outbox (recipient, destination, host_id, kind, transfer_id, target)
  select ${recipientOf(sql`d.user_mail`)}, c.destination, ${hostId}, 'start', c.id, c.target
  from ${claimed} c ${destinationOf(sql`c.destination`)}
  where d.mail_on_start and ${recipientOf(sql`d.user_mail`)} is not null
  order by c.id`;

/**
 * The `with` entries writing the mails of ended attempts: `ended` is the statement's relation of them (id,
 * destination, host_id, target), `failed` whether an attempt failed and `reason` its message, both on `e`.
 * The destination's `end` or `error` row, and its host's: a failure begins the host's episode (when it has a
 * mail option), its `host-error` row written at every failure or, with notifyOnce, at the episode's first
 * only; a success ends the episode, with a `host-success` row when it had one.
 */
export const endMails = (ended: SQL, failed: SQL, reason: SQL, at: string) => sql`
  mail_episode as (
    insert into host_mail_episodes (host_id, failing_since)
    select distinct e.host_id, ${at}::timestamptz
    from ${ended} e cross join ${hostOf(sql`e.host_id`)}
    where ${failed} and (h.mail_on_error or h.mail_on_success)
    on conflict (host_id) do nothing
    returning host_id
  ), mail_recovered as (
    delete from host_mail_episodes x using ${ended} e where not ${failed} and x.host_id = e.host_id
    returning x.host_id
  ), mail as (
    insert into mail_outbox (recipient, destination, host_id, kind, transfer_id, target, reason)
    select m.recipient, e.destination, e.host_id, m.kind, e.id, e.target, m.reason
    from ${ended} e ${destinationOf(sql`e.destination`)}
      left join ${hostOf(sql`e.host_id`)} on true
      cross join lateral (values
        (case when ${failed} then case when d.mail_on_error then ${recipientOf(sql`d.user_mail`)} end
          when d.mail_on_end then ${recipientOf(sql`d.user_mail`)} end,
          case when ${failed} then 'error' else 'end' end, ${reason}, 1),
        (case when ${failed} and h.mail_on_error
            and (not h.notify_once or e.host_id in (select host_id from mail_episode))
          then ${hostRecipient} end, 'host-error', ${reason}, 2),
        (case when not ${failed} and h.mail_on_success and e.host_id in (select host_id from mail_recovered)
            and e.id = (select min(o.id) from ${ended} o where o.host_id = e.host_id)
          then ${hostRecipient} end, 'host-success', 'works again after failing', 3)
      ) m(recipient, kind, reason, ord)
    where m.recipient is not null
    order by e.id, m.ord
  )`;

/**
 * The `with` entries writing the mails of a host check: `finished` is the statement's relation of the checked
 * host (hostid). The episode is the one failed transfers keep (endMails): a failure begins it, with a
 * `host-error` row at every failed check or, with notifyOnce, at the episode's first only; a success ends it,
 * with a `host-success` row when it had one. A row goes for each destination the host serves, to the host's
 * address or else that destination's.
 */
export const checkMails = (finished: SQL, result: { ok: boolean; message: string }, at: string) => sql`
  check_episode as (
    insert into host_mail_episodes (host_id, failing_since)
    select f.hostid::text, ${at}::timestamptz from ${finished} f join hosts h on h.hostid = f.hostid
    where not ${result.ok}::boolean and (h.mail_on_error or h.mail_on_success)
    on conflict (host_id) do nothing
    returning host_id
  ), check_recovered as (
    delete from host_mail_episodes x using ${finished} f where ${result.ok}::boolean and x.host_id = f.hostid::text
    returning x.host_id
  ), check_mail as (
    insert into mail_outbox (recipient, destination, host_id, kind, reason)
    select ${hostRecipient}, a.destination, f.hostid::text,
      case when ${result.ok}::boolean then 'host-success' else 'host-error' end,
      case when ${result.ok}::boolean then 'works again after failing: ' || ${result.message}::text
        else ${result.message}::text end
    from ${finished} f join hosts h on h.hostid = f.hostid
      join destination_hosts a on a.hostid = f.hostid join destinations d on d.name = a.destination
    where ${hostRecipient} is not null and case when ${result.ok}::boolean
      then h.mail_on_success and exists (select 1 from check_recovered)
      else h.mail_on_error and (not h.notify_once or exists (select 1 from check_episode)) end
    order by a.destination
  )`;

/**
 * The `hold` row of a destination every host of which failed (mailOnError): `held` is the statement's
 * relation of the destinations put on HOLD (their row, as `returning *` gives it).
 */
export const holdMails = (held: SQL) => sql`
  insert into mail_outbox (recipient, destination, kind, reason)
  select ${recipientOf(sql`d.user_mail`)}, d.name, 'hold',
    'every host failed its rounds: the destination is on HOLD until an operator restarts it'
  from ${held} d where d.mail_on_error and ${recipientOf(sql`d.user_mail`)} is not null`;

/** The `update` row of a changed destination (mailOnUpdate): `changed` is as `held` is for holdMails. */
export const updateMails = (changed: SQL, reason: string) => sql`
  insert into mail_outbox (recipient, destination, kind, reason)
  select ${recipientOf(sql`d.user_mail`)}, d.name, 'update', ${reason}::text
  from ${changed} d where d.mail_on_update and ${recipientOf(sql`d.user_mail`)} is not null`;

/** The advisory lock space of the mail outbox's claims. */
const MAIL_LOCKS = 7032;

type GroupRow = {
  recipient: string;
  destination: string;
  kind: MailKind;
  first_id: string | number;
  last_id: string | number;
  n: number;
};

type ItemRow = {
  id: string | number;
  recipient: string;
  destination: string;
  kind: MailKind;
  host_id: string | null;
  transfer_id: string | number | null;
  target: string | null;
  reason: string | null;
  created_at: string | Date;
};

const keyOf = (r: { recipient: string; destination: string; kind: string }) =>
  JSON.stringify([r.recipient, r.destination, r.kind]);

export const mailOutboxRepo = (db: Database): MailOutboxRepo => ({
  async claim({ now, until, ripeBefore, groups, listed, newClaim }) {
    const at = now.toISOString();
    const claim = newClaim();
    // One claim at a time across senders: each sees what the others hold.
    const chosen = await inTurn(db, MAIL_LOCKS, async (tx) => {
      const due = rowsOf<GroupRow>(
        await tx.execute(sql`
          select recipient, destination, kind, min(id) as first_id, max(id) as last_id, count(*)::int as n
          from mail_outbox
          where done_at is null and (claimed_until is null or claimed_until <= ${at}::timestamptz)
          group by recipient, destination, kind
          -- A group gathers its rows for a while after its first: a burst within it is one mail.
          having min(created_at) <= ${ripeBefore.toISOString()}::timestamptz
          order by min(id)
          limit ${groups}::int`),
      );
      if (due.length === 0) return [];
      await tx.execute(sql`
        update mail_outbox o set claim = ${claim}, claimed_until = ${until.toISOString()}::timestamptz
        from jsonb_to_recordset(${JSON.stringify(due)}::jsonb)
          as g(recipient text, destination text, kind text, first_id bigint, last_id bigint)
        where o.done_at is null and (o.claimed_until is null or o.claimed_until <= ${at}::timestamptz)
          and o.recipient = g.recipient and o.destination = g.destination and o.kind = g.kind
          and o.id between g.first_id and g.last_id`);
      return due;
    });
    if (chosen.length === 0) return [];
    const items = rowsOf<ItemRow>(
      await db.execute(sql`
        select id, recipient, destination, kind, host_id, transfer_id, target, reason, created_at from (
          select o.*, row_number() over (partition by recipient, destination, kind order by id) as rn
          from mail_outbox o where o.claim = ${claim} and o.done_at is null) x
        where rn <= ${listed}::int
        order by id`),
    );
    const byKey = new Map<string, ClaimedGroup>();
    const claimed = chosen.map((g) => {
      const group: ClaimedGroup = {
        recipient: g.recipient,
        destination: g.destination,
        kind: g.kind,
        count: Number(g.n),
        items: [],
        claim,
        firstId: Number(g.first_id),
        lastId: Number(g.last_id),
      };
      byKey.set(keyOf(g), group);
      return group;
    });
    for (const r of items) {
      byKey.get(keyOf(r))?.items.push({
        id: Number(r.id),
        hostId: r.host_id,
        transferId: r.transfer_id === null ? null : Number(r.transfer_id),
        target: r.target,
        reason: r.reason,
        at: new Date(r.created_at),
      });
    }
    return claimed;
  },
  async finish(group, outcome, at) {
    await db.execute(sql`
      update mail_outbox set done_at = ${at.toISOString()}::timestamptz, outcome = ${outcome}, claimed_until = null
      where claim = ${group.claim} and done_at is null and recipient = ${group.recipient}
        and destination = ${group.destination} and kind = ${group.kind}
        and id between ${group.firstId} and ${group.lastId}`);
  },
  async release(claims, error) {
    if (claims.length === 0) return;
    await db.execute(sql`
      update mail_outbox set claim = null, claimed_until = null, attempts = attempts + 1,
        last_error = ${error.slice(0, 1000)}
      where done_at is null and claim in (select jsonb_array_elements_text(${JSON.stringify(claims)}::jsonb))`);
  },
  async prune(before) {
    const rows = rowsOf<{ n: number }>(
      await db.execute(sql`
        with gone as (delete from mail_outbox where done_at < ${before.toISOString()}::timestamptz returning 1)
        select count(*)::int as n from gone`),
    );
    return Number(rows[0]?.n ?? 0);
  },
  async pending() {
    const rows = rowsOf<{ n: number; oldest: string | number | null }>(
      await db.execute(sql`
        select count(*)::int as n, extract(epoch from now() - min(created_at))::float8 as oldest
        from mail_outbox where done_at is null`),
    );
    const row = rows[0];
    return {
      count: Number(row?.n ?? 0),
      oldestSeconds: Math.max(0, Number(row?.oldest ?? 0)),
    };
  },
});
