import { and, asc, eq } from 'drizzle-orm';
import type { AuthorizedKey } from '../../core/portal/authorized-keys.ts';
import type { PortalRepo } from '../../core/portal/ports.ts';
import type { Database } from '../client.ts';
import { portalAuthorizedKeys } from '../schema.ts';

type KeyRepo = Pick<PortalRepo, 'authorizedKeys' | 'authorizedKey' | 'addAuthorizedKey' | 'removeAuthorizedKey'>;

const toKey = (row: typeof portalAuthorizedKeys.$inferSelect): AuthorizedKey => ({
  algorithm: row.algorithm,
  blob: row.blob,
  fingerprint: row.fingerprint,
  comment: row.comment,
  addedAt: row.addedAt,
});

/** The portal users' SFTP keys (db/schema.ts portalAuthorizedKeys). */
export const portalKeys = (db: Database): KeyRepo => ({
  async authorizedKeys(userId) {
    const rows = await db
      .select()
      .from(portalAuthorizedKeys)
      .where(eq(portalAuthorizedKeys.userId, userId))
      .orderBy(asc(portalAuthorizedKeys.addedAt), asc(portalAuthorizedKeys.fingerprint));
    return rows.map(toKey);
  },
  async authorizedKey(userId, fingerprint) {
    const [row] = await db
      .select()
      .from(portalAuthorizedKeys)
      .where(and(eq(portalAuthorizedKeys.userId, userId), eq(portalAuthorizedKeys.fingerprint, fingerprint)));
    return row === undefined ? null : toKey(row);
  },
  async addAuthorizedKey(userId, key, at) {
    const added = await db
      .insert(portalAuthorizedKeys)
      .values({ userId, ...key, addedAt: at })
      .onConflictDoNothing()
      .returning({ fingerprint: portalAuthorizedKeys.fingerprint });
    return added.length > 0;
  },
  async removeAuthorizedKey(userId, fingerprint) {
    const removed = await db
      .delete(portalAuthorizedKeys)
      .where(and(eq(portalAuthorizedKeys.userId, userId), eq(portalAuthorizedKeys.fingerprint, fingerprint)))
      .returning({ fingerprint: portalAuthorizedKeys.fingerprint });
    return removed.length > 0;
  },
});
