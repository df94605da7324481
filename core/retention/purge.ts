import type { Ports } from '../ports.ts';
import type { PurgedBatch } from './ports.ts';

/** The reference's maxTransferLife and maxIdentityCount, and how many rows one batch may take. */
export interface RetentionLimits {
  maxTransferLifeDays: number;
  maxIdentityCount: number;
  batchSize: number;
  /** Batches of each kind one sweep runs at most, so that a sweep ends; the next one goes on. */
  maxBatches?: number;
}

export const DEFAULT_RETENTION: RetentionLimits = { maxTransferLifeDays: 210, maxIdentityCount: 7, batchSize: 1000 };

const DAY_MS = 86_400_000;
/**
 * Ids are taken before their transaction commits: a transfer younger than this may still appear
 * below the last id read, so the identity check waits for it.
 */
const SETTLE_MS = 60_000;

export interface PurgeResult extends PurgedBatch {
  batches: number;
}

/**
 * Deletes ended transfers older than the life limit, then those beyond the identity limit, each in
 * batches of its own short transaction. A transfer waiting or running is never taken.
 */
export async function purgeRetired(ports: Ports, limits: RetentionLimits = DEFAULT_RETENTION): Promise<PurgeResult> {
  const repo = ports.repos.retention;
  const now = ports.clock().getTime();
  const maxBatches = limits.maxBatches ?? 100;
  const result: PurgeResult = { transfers: 0, history: 0, dataFiles: 0, batches: 0 };
  const add = (b: PurgedBatch) => {
    result.transfers += b.transfers;
    result.history += b.history;
    result.dataFiles += b.dataFiles;
    result.batches++;
  };
  const before = new Date(now - limits.maxTransferLifeDays * DAY_MS);
  for (let i = 0; i < maxBatches; i++) {
    const batch = await repo.purgeAged(before, limits.batchSize, new Date(now));
    add(batch);
    if (batch.transfers < limits.batchSize) break;
  }
  const settled = new Date(now - SETTLE_MS);
  for (let i = 0; i < maxBatches; i++) {
    const batch = await repo.purgeIdentities(limits.maxIdentityCount, limits.batchSize, settled);
    add(batch);
    if (batch.read < limits.batchSize) break;
  }
  return result;
}
