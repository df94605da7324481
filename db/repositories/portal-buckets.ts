import { inArray } from 'drizzle-orm';
import type { PortalRepo } from '../../core/portal/ports.ts';
import type { Database } from '../client.ts';
import { destinations } from '../schema.ts';

/** The portal's view of destinations as S3 buckets: when each was created (ListBuckets' CreationDate). */
export const portalBuckets = (db: Database): Pick<PortalRepo, 'destinationsCreated'> => ({
  async destinationsCreated(names) {
    if (names.length === 0) return new Map();
    const rows = await db
      .select({ name: destinations.name, createdAt: destinations.createdAt })
      .from(destinations)
      .where(inArray(destinations.name, [...names]));
    return new Map(rows.map((r) => [r.name, r.createdAt]));
  },
});
