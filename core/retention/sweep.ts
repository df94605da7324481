import { sweepExpired } from '../data-files/handlers.ts';
import type { Ports } from '../ports.ts';
import { DEFAULT_STORE_RETENTION, type StoreRetention, type StoreSweep, sweepStore } from './objects.ts';
import { type PurgeResult, purgeRetired, type RetentionLimits } from './purge.ts';

/**
 * The periodic sweep: fails the transfers past their expiry, purges the ended ones past the
 * retention limits, then removes the stored objects no transfer needs. One failing does not keep
 * the others from running; the first error is thrown.
 */
export async function sweep(
  ports: Ports,
  limits: RetentionLimits,
  storeLimits: StoreRetention = DEFAULT_STORE_RETENTION,
): Promise<{ expired: number; purged: PurgeResult; store: StoreSweep }> {
  let failure: unknown = null;
  const failed =
    <T>(empty: T) =>
    (e: unknown) => {
      failure ??= e;
      return empty;
    };
  const expired = await sweepExpired(ports).catch(failed(0));
  const purged = await purgeRetired(ports, limits).catch(
    failed<PurgeResult>({ transfers: 0, history: 0, dataFiles: 0, batches: 0 }),
  );
  const store = await sweepStore(ports, storeLimits).catch(failed<StoreSweep>({ objects: 0, bytes: 0, orphans: 0 }));
  if (failure !== null) throw failure;
  if (purged.transfers > 0) {
    ports.logger.info('purged', { transfers: purged.transfers, history: purged.history, dataFiles: purged.dataFiles });
  }
  if (store.objects > 0) ports.logger.info('stored objects removed', { objects: store.objects, bytes: store.bytes });
  return { expired, purged, store };
}
