import { eq, sql } from 'drizzle-orm';
import type { NewTransfer, RegisteredFile } from '../../core/data-files/ports.ts';
import type { ReceivedMessage } from '../../core/wis2/ports.ts';
import type { Database } from '../client.ts';
import { dataFiles, dataTransfers, transferHistory } from '../schema.ts';
import { interruption } from './transfers.ts';
import { announceTransfer } from './wis2-outbox.ts';

export type Tx = Parameters<Parameters<Database['transaction']>[0]>[0];

/** The status a transfer is written with, and the one it takes once its file is retrieved. */
export const startingStatus = (file: { retrieve: boolean }, planned: string) =>
  file.retrieve ? { status: 'SCHE', readyStatus: planned } : { status: planned, readyStatus: null };

/** A forced put on a live transfer, in the caller's transaction: the new file and schedule, with history. */
export async function requeueIn(
  tx: Tx,
  transferId: number,
  file: Pick<RegisteredFile, 'source' | 'size' | 'comment' | 'retrieve' | 'acquiredFrom'> &
    Partial<Pick<RegisteredFile, 'registeredBy'>>,
  transfer: NewTransfer,
) {
  const at = new Date();
  const [before] = await tx
    .select({ status: dataTransfers.status })
    .from(dataTransfers)
    .where(eq(dataTransfers.id, transferId))
    .for('update');
  if (!before) return;
  const { queueAt, ...fields } = transfer;
  const columns = {
    destination: fields.destination,
    target: fields.target,
    uniqueName: fields.uniqueName,
    priority: fields.priority,
    ...startingStatus(file, fields.status),
    standby: fields.standby,
    scheduledAt: fields.scheduledAt,
    expiresAt: fields.expiresAt,
    metadata: fields.metadata,
  };
  // The attempt running now (if any) keeps its mover: it is ended, not joined by a second writer.
  const [row] = await tx
    .update(dataTransfers)
    .set({ ...columns, queueAt: queueAt ?? transfer.scheduledAt, message: null, updatedAt: at })
    .where(eq(dataTransfers.id, transferId))
    .returning({ dataFileId: dataTransfers.dataFileId });
  if (!row) return;
  const entry = { transferId, destination: transfer.destination, at };
  const { comment } = file;
  await tx
    .insert(transferHistory)
    .values([...interruption(before.status, entry, comment), { ...entry, status: columns.status, comment }]);
  // New bytes: a new instance, retrieved (or measured and hashed at its send) on its own; the copy of
  // the earlier one stays for the links that announced it. They are whoever put them's: a portal
  // user's held upload shows to that user only (db/repositories/portal-shown.ts).
  await tx
    .update(dataFiles)
    .set({
      ...(file.registeredBy === undefined ? {} : { registeredBy: file.registeredBy }),
      source: file.source,
      size: file.size,
      acquiredFrom: file.acquiredFrom?.hostId ?? null,
      sourceTime: file.acquiredFrom?.time ?? null,
      checksum: null,
      sha512: null,
      instance: sql`${dataFiles.instance} + 1`,
      objectKey: null,
      retrievedAt: null,
      fetchMover: null,
      fetchLeaseUntil: null,
      fetchTries: 0,
      fetchAt: null,
    })
    .where(eq(dataFiles.id, row.dataFileId));
  await noticeRequeue(tx, { transferId, dataFileId: row.dataFileId, ...transfer }, at, file.acquiredFrom?.notice);
}

/**
 * A forced put's WIS2 notification, in its transaction: an update of a file already shown, or,
 * when the file's own notice is still waiting for its queue time (never shown yet), that notice
 * again with the new queue time.
 */
async function noticeRequeue(
  tx: Tx,
  t: { transferId: number; dataFileId: number; destination: string; target: string; scheduledAt: Date },
  at: Date,
  origin: ReceivedMessage | undefined,
) {
  const now = at.toISOString();
  const unseen = sql`unseen as (
      delete from wis2_outbox
      where transfer_id = ${t.transferId} and done_at is null and kind <> 'deletion'
        and not_before > ${now}::timestamptz
      returning id
    ),`;
  const kind = sql`case when exists (select 1 from unseen) then 'new' else 'update' end`;
  const notBefore = sql`greatest(${t.scheduledAt.toISOString()}::timestamptz, ${now}::timestamptz)`;
  await tx.execute(announceTransfer(t, kind, notBefore, unseen, origin));
}
