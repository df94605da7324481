import { and, eq, sql } from 'drizzle-orm';
import type { DataFileRepo, RegisteredFile } from '../../core/data-files/ports.ts';
import { DEFAULT_MAX_PENDING, type PlannedTransfer, type PutDestination } from '../../core/data-files/put-plan.ts';
import { type Database, rowsOf } from '../client.ts';
import { executePrepared } from '../prepared.ts';
import { dataFiles, dataTransfers, transferHistory } from '../schema.ts';
import { requeueIn, startingStatus, type Tx } from './data-file-requeue.ts';
import { announceTransfer } from './wis2-outbox.ts';

type ReachRow = {
  name: string;
  data: string;
  max_pending: number | string | null;
  max_file_size: number | string | null;
  pending: number | string;
  aliases: string[] | string | null;
};

const LIVE = sql`${dataTransfers.status} not in ('STOP', 'FAIL')`;
const numberOrNull = (v: number | string | null) => (v === null ? null : Number(v));
// Postgres gives text[] as an array; a driver that does not parse it gives its text form.
const names = (v: string[] | string | null): string[] =>
  v === null
    ? []
    : Array.isArray(v)
      ? v
      : v
          .replace(/^\{|\}$/g, '')
          .split(',')
          .filter((n) => n !== '');

/** Rolls the put's transaction back when a concurrent put took one of its keys. */
class KeyTaken extends Error {}

export const dataFilePutRepo = (db: Database): Pick<DataFileRepo, 'putReach' | 'registerAll'> => ({
  async putReach(destination) {
    // `union` keeps each destination once, so a cycle of aliases ends. Each step of the closure and
    // each destination it reaches is one index lookup: the lateral subqueries (kept apart by
    // `offset 0`) leave the planner no join to choose. Joined as tables, `destination_aliases`,
    // never analyzed where no alias was ever written, made the closure look thousands of rows long,
    // and Postgres hashed every destination for every put.
    const rows = rowsOf<ReachRow>(
      await executePrepared(
        db,
        sql`
        with recursive reach(name) as (
          select name from destinations where name = ${destination}
          union
          select a.alias_to from reach r
            cross join lateral (select a.alias_to from destination_aliases a where a.alias_from = r.name offset 0) a
        )
        select d.name, d.data, d.max_pending, d.max_file_size,
          case when c.cap > 0 and seen.n > c.cap then (select count(*) from data_transfers t
            where t.destination = d.name and t.status in ('WAIT', 'RETR', 'INTR')) else seen.n end as pending,
          array(select a.alias_to from destination_aliases a where a.alias_from = d.name order by a.alias_to)
            as aliases
        from reach r
        cross join lateral (select d.name, d.data, d.max_pending, d.max_file_size from destinations d
          where d.name = r.name offset 0) d
        -- Counted only as far as the limit needs: a put must not cost more as a backlog grows. Past the
        -- limit (a refusal, which says how many), counted whole.
        cross join lateral (select greatest(coalesce(d.max_pending, ${DEFAULT_MAX_PENDING}::int), 0) as cap) c
        cross join lateral (select count(*) as n from (select 1 from data_transfers t
          where t.destination = d.name and t.status in ('WAIT', 'RETR', 'INTR') limit c.cap + 1) w) seen`,
        'putReach',
      ),
    );
    if (!rows.some((r) => r.name === destination)) return null;
    return new Map<string, PutDestination>(
      rows.map((r) => [
        r.name,
        {
          name: r.name,
          data: r.data,
          maxPending: numberOrNull(r.max_pending),
          maxFileSize: numberOrNull(r.max_file_size),
          pending: Number(r.pending),
          aliases: names(r.aliases),
        },
      ]),
    );
  },
  async registerAll(file, transfers, { force, forcedComment, holds }) {
    try {
      return await db.transaction(async (tx) => {
        const live = await liveOf(tx, transfers);
        if (live.size > 0 && !force) return { taken: [...live.values()][0]!.dataFileId };
        const existing = live.size > 0 ? [...live.values()][0]!.dataFileId : null;
        const id = existing ?? (await insertFile(tx, file));
        for (const t of transfers) {
          const holder = live.get(keyOf(t));
          const comment = withAlias(existing === null ? file.comment : forcedComment, t);
          if (holder) await requeueIn(tx, holder.transferId, { ...file, comment }, t);
          else await insertTransfer(tx, id, { ...t, ...startingStatus(file, t.status) }, comment);
        }
        await holdDuplicates(tx, transfers, holds);
        return { id, replaced: existing !== null };
      });
    } catch (e) {
      if (e instanceof KeyTaken) return 'taken';
      throw e;
    }
  },
});

const keyOf = (t: { destination: string; target: string; uniqueName: string }) =>
  JSON.stringify([t.destination, t.target, t.uniqueName]);
const withAlias = (comment: string, t: PlannedTransfer) => (t.aliasedFrom ? `${comment} ${t.aliasedFrom}` : comment);

async function liveOf(tx: Tx, transfers: PlannedTransfer[]) {
  const rows = await tx
    .select({
      transferId: dataTransfers.id,
      dataFileId: dataTransfers.dataFileId,
      destination: dataTransfers.destination,
      target: dataTransfers.target,
      uniqueName: dataTransfers.uniqueName,
    })
    .from(dataTransfers)
    // The live-key index: only the transfers holding one of the put's keys, however many others wait.
    .where(
      and(
        sql`(${dataTransfers.destination}, ${dataTransfers.target}, ${dataTransfers.uniqueName}) in (${sql.join(
          transfers.map((t) => sql`(${t.destination}, ${t.target}, ${t.uniqueName})`),
          sql`, `,
        )})`,
        LIVE,
      ),
    )
    .for('update');
  return new Map(rows.map((r) => [keyOf(r), r]));
}

async function insertFile(tx: Tx, file: RegisteredFile) {
  const [row] = await tx
    .insert(dataFiles)
    .values({
      source: file.source,
      size: file.size,
      registeredBy: file.registeredBy,
      acquiredFrom: file.acquiredFrom?.hostId ?? null,
      sourceTime: file.acquiredFrom?.time ?? null,
    })
    .returning({ id: dataFiles.id });
  return row!.id;
}

async function insertTransfer(
  tx: Tx,
  dataFileId: number,
  t: Omit<PlannedTransfer, 'status'> & ReturnType<typeof startingStatus>,
  comment: string,
) {
  const { aliasedFrom: _from, queueAt, ...fields } = t;
  const [row] = await tx
    .insert(dataTransfers)
    .values({ ...fields, dataFileId, queueAt })
    .onConflictDoNothing()
    .returning({ id: dataTransfers.id });
  if (!row) throw new KeyTaken();
  const at = new Date();
  await tx
    .insert(transferHistory)
    .values({ transferId: row.id, destination: t.destination, status: t.status, at, comment });
  const notice = { dataFileId, transferId: row.id, destination: t.destination, target: t.target };
  await tx.execute(announceTransfer(notice, sql`'new'`, sql`${t.scheduledAt.toISOString()}::timestamptz`));
}

type SameTargetRow = {
  id: string | number;
  status: string;
  size: string | number;
  registered: string | Date;
  scheduled_at: string | Date;
};

/** requeueon: the waiting transfers of each put target that a duplicate displaces go to HOLD, with history. */
async function holdDuplicates(
  tx: Tx,
  transfers: PlannedTransfer[],
  holds: Parameters<DataFileRepo['registerAll']>[2]['holds'],
) {
  for (const t of transfers) {
    const rows = rowsOf<SameTargetRow>(
      await tx.execute(sql`
        select t.id, t.status, f.size, f.created_at as registered, t.scheduled_at
        from data_transfers t join data_files f on f.id = t.data_file_id
        where t.destination = ${t.destination} and t.target = ${t.target} and t.status <> 'STOP'
          and f.deleted_at is null
        order by t.id`),
    );
    if (rows.length < 2) continue;
    const files = rows.map((r) => ({
      transferId: Number(r.id),
      status: r.status,
      size: Number(r.size),
      time: new Date(r.registered).getTime(),
      scheduledAt: new Date(r.scheduled_at),
    }));
    const at = new Date();
    for (const { transferId, comment } of holds(t.destination, t.target, files)) {
      const held = await tx
        .update(dataTransfers)
        .set({ status: 'HOLD', message: comment, updatedAt: at })
        .where(and(eq(dataTransfers.id, transferId), eq(dataTransfers.status, 'WAIT')))
        .returning({ id: dataTransfers.id });
      if (held.length > 0)
        await tx
          .insert(transferHistory)
          .values({ transferId, destination: t.destination, status: 'HOLD', at, comment });
    }
  }
}
