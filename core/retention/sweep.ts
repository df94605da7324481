import { sweepExpired } from '../data-files/handlers.ts';
import type { Ports } from '../ports.ts';
import { type PurgeResult, purgeRetired, type RetentionLimits } from './purge.ts';

/**
 * The periodic sweep: fails the transfers past their expiry, then purges the ended ones past the
 * retention limits. One failing does not keep the other from running; the first error is thrown.
 */
export async function sweep(ports: Ports, limits: RetentionLimits): Promise<{ expired: number; purged: PurgeResult }> {
  let failure: unknown = null;
  const expired = await sweepExpired(ports).catch((e: unknown) => {
    failure = e;
    return 0;
  });
  const purged = await purgeRetired(ports, limits);
  if (failure !== null) throw failure;
  if (purged.transfers > 0) {
    ports.logger.info('purged', { transfers: purged.transfers, history: purged.history, dataFiles: purged.dataFiles });
  }
  return { expired, purged };
}
