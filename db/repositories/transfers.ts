import { and, asc, desc, eq } from 'drizzle-orm';
import type { TransferRepo } from '../../core/dissemination/ports.ts';
import type { Database } from '../client.ts';
import { isUniqueViolation } from '../errors.ts';
import { dataFiles, dataTransfers, transferHistory } from '../schema.ts';

const columns = {
  id: dataTransfers.id,
  dataFileId: dataTransfers.dataFileId,
  destination: dataTransfers.destination,
  target: dataTransfers.target,
  uniqueName: dataTransfers.uniqueName,
  status: dataTransfers.status,
  priority: dataTransfers.priority,
  scheduledAt: dataTransfers.scheduledAt,
  expiresAt: dataTransfers.expiresAt,
  message: dataTransfers.message,
  source: dataFiles.source,
  size: dataFiles.size,
  md5: dataFiles.checksum,
  sha512: dataFiles.sha512,
  updatedAt: dataTransfers.updatedAt,
};

/**
 * The history row that says a running attempt was ended by a change: its mover stops writing at its
 * next heartbeat, and the transfer is claimed again only once it has (or its lease lapsed).
 */
export function interruption(from: string, entry: { transferId: number; destination: string; at: Date }, why: string) {
  return from === 'EXEC' ? [{ ...entry, status: 'INTR', comment: `Interrupted: ${why}`, error: false }] : [];
}

export const transferRepo = (db: Database): TransferRepo => ({
  async interruptDestination(destination, at, why) {
    const rows = await db
      .update(dataTransfers)
      .set({ status: 'INTR', updatedAt: at })
      .where(and(eq(dataTransfers.destination, destination), eq(dataTransfers.status, 'EXEC')))
      .returning({ transferId: dataTransfers.id, hostId: dataTransfers.hostId });
    if (rows.length > 0) {
      await db
        .insert(transferHistory)
        .values(rows.map((r) => ({ ...r, destination, at, status: 'INTR', comment: `Interrupted: ${why}` })));
    }
  },
  async list({ destination, status, limit }) {
    return db
      .select(columns)
      .from(dataTransfers)
      .innerJoin(dataFiles, eq(dataFiles.id, dataTransfers.dataFileId))
      .where(
        and(
          destination === undefined ? undefined : eq(dataTransfers.destination, destination),
          status === undefined ? undefined : eq(dataTransfers.status, status),
        ),
      )
      .orderBy(desc(dataTransfers.id))
      .limit(limit);
  },
  async get(id) {
    const [row] = await db
      .select(columns)
      .from(dataTransfers)
      .innerJoin(dataFiles, eq(dataFiles.id, dataTransfers.dataFileId))
      .where(eq(dataTransfers.id, id));
    return row ?? null;
  },
  async forChange(id) {
    const [row] = await db
      .select({
        status: dataTransfers.status,
        destination: dataTransfers.destination,
        priority: dataTransfers.priority,
        expiresAt: dataTransfers.expiresAt,
        deletedAt: dataFiles.deletedAt,
      })
      .from(dataTransfers)
      .innerJoin(dataFiles, eq(dataFiles.id, dataTransfers.dataFileId))
      .where(eq(dataTransfers.id, id))
      .for('update', { of: dataTransfers });
    return row ? { ...row, deleted: row.deletedAt !== null } : null;
  },
  async changeStatus(id, from, to, at, comment) {
    // In a savepoint: a requeue that collides with the live key must not spoil the caller's transaction.
    try {
      return await db.transaction(async (tx) => {
        const [row] = await tx
          .update(dataTransfers)
          // A requeue is due at once, with its start and requeue limits counted afresh (as the reference's console).
          .set(
            to === 'RETR'
              ? { status: to, queueAt: at, startCount: 0, requeueCount: 0, updatedAt: at }
              : { status: to, updatedAt: at },
          )
          .where(and(eq(dataTransfers.id, id), eq(dataTransfers.status, from)))
          .returning({ destination: dataTransfers.destination });
        if (!row) return 'changed meanwhile' as const;
        const entry = { transferId: id, destination: row.destination, at };
        await tx
          .insert(transferHistory)
          .values([...interruption(from, entry, comment), { ...entry, status: to, comment }]);
        return 'changed' as const;
      });
    } catch (error) {
      if (isUniqueViolation(error)) return 'key taken';
      throw error;
    }
  },
  async setPriority(id, priority, at, comment) {
    const [row] = await db
      .update(dataTransfers)
      .set({ priority, updatedAt: at })
      .where(eq(dataTransfers.id, id))
      .returning({ destination: dataTransfers.destination, status: dataTransfers.status });
    if (row) await db.insert(transferHistory).values({ transferId: id, ...row, at, comment });
  },
  async history(id) {
    // In the order the changes were made: a transfer's changes are serialized by its row lock, while
    // their times come from the clocks of whichever processes made them.
    return db
      .select({
        at: transferHistory.at,
        status: transferHistory.status,
        hostId: transferHistory.hostId,
        sent: transferHistory.sent,
        comment: transferHistory.comment,
        error: transferHistory.error,
      })
      .from(transferHistory)
      .where(eq(transferHistory.transferId, id))
      .orderBy(asc(transferHistory.id));
  },
});
