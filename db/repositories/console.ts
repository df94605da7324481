import { and, asc, desc, eq, gt, like, lte } from 'drizzle-orm';
import type { ConsoleRepo } from '../../core/console/ports.ts';
import type { Database } from '../client.ts';
import { aclCategories, auditLog, consoleSessions, signInFailures, webUserCategories, webUsers } from '../schema.ts';
import { webUsersWithCategories } from './web-users.ts';

export const consoleRepo = (db: Database): ConsoleRepo => ({
  async categories() {
    return db.select().from(aclCategories).orderBy(asc(aclCategories.id));
  },
  webUsers: () => webUsersWithCategories(db),
  async categoriesOf(userId) {
    const rows = await db
      .select({ category: webUserCategories.category })
      .from(webUserCategories)
      .where(eq(webUserCategories.userId, userId));
    return rows.map((r) => r.category);
  },
  async grant(userId, category) {
    await db.insert(webUserCategories).values({ userId, category }).onConflictDoNothing();
  },
  async revoke(userId, category) {
    const rows = await db
      .delete(webUserCategories)
      .where(and(eq(webUserCategories.userId, userId), eq(webUserCategories.category, category)))
      .returning({ userId: webUserCategories.userId });
    return rows.length > 0;
  },
  async createSession(tokenHash, session) {
    await db.insert(consoleSessions).values({ tokenHash, ...session });
  },
  async session(tokenHash) {
    const [row] = await db
      .select({ userId: consoleSessions.userId, csrf: consoleSessions.csrf, lastSeenAt: consoleSessions.lastSeenAt })
      .from(consoleSessions)
      .where(eq(consoleSessions.tokenHash, tokenHash));
    return row ?? null;
  },
  async touchSession(tokenHash, at) {
    await db.update(consoleSessions).set({ lastSeenAt: at }).where(eq(consoleSessions.tokenHash, tokenHash));
  },
  async deleteSession(tokenHash) {
    await db.delete(consoleSessions).where(eq(consoleSessions.tokenHash, tokenHash));
  },
  async endSessionsOf(userId) {
    await db.select({ id: webUsers.id }).from(webUsers).where(eq(webUsers.id, userId)).for('update');
    await db.delete(consoleSessions).where(eq(consoleSessions.userId, userId));
  },
  signInFailures: {
    async recent(key, since, keep) {
      const rows = await db
        .select({ failedAt: signInFailures.failedAt })
        .from(signInFailures)
        .where(and(eq(signInFailures.key, key), gt(signInFailures.failedAt, new Date(since))))
        .orderBy(desc(signInFailures.failedAt))
        .limit(keep);
      return rows.map((r) => r.failedAt.getTime()).reverse();
    },
    async add(key, at, since) {
      await db.insert(signInFailures).values({ key, failedAt: new Date(at) });
      // Every key's of the same kind (the text before the first ':'), not only this one's: keys that
      // stop failing would otherwise stay forever. Kinds counted over longer windows keep theirs.
      const kind = key.slice(0, key.indexOf(':') + 1);
      const old = lte(signInFailures.failedAt, new Date(since));
      await db
        .delete(signInFailures)
        .where(kind === '' ? old : and(old, like(signInFailures.key, `${kind.replace(/[\\%_]/g, '\\$&')}%`)));
    },
  },
  async audit(entry) {
    await db.insert(auditLog).values(entry);
  },
  async auditTrail(limit) {
    const rows = await db.select().from(auditLog).orderBy(desc(auditLog.at), desc(auditLog.id)).limit(limit);
    return rows.map(({ id: _id, ...r }) => r);
  },
});
