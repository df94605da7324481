import { and, asc, desc, eq } from 'drizzle-orm';
import type { TransferRepo } from '../../core/dissemination/ports.ts';
import type { Database } from '../client.ts';
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
  updatedAt: dataTransfers.updatedAt,
};

export const transferRepo = (db: Database): TransferRepo => ({
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
  async history(id) {
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
      .orderBy(asc(transferHistory.at), asc(transferHistory.id));
  },
});
