import { and, asc, eq, gt, inArray, ne, sql } from 'drizzle-orm';
import type { HostRepo, ReferenceRepo } from '../../core/hosts/ports.ts';
import type { Database } from '../client.ts';
import { destinationHosts, ectransModules, ecusers, hosts, transferMethods } from '../schema.ts';

export const hostRepo = (db: Database): HostRepo => ({
  async find(hostid) {
    // Callers read-modify-write the options text inside a transaction: lock the row.
    const [row] = await db.select().from(hosts).where(eq(hosts.hostid, hostid)).for('update');
    return row ?? null;
  },
  async setData(hostid, data) {
    await db.update(hosts).set({ data }).where(eq(hosts.hostid, hostid));
  },
  async optionTexts(afterHostid, limit) {
    return db
      .select({ hostid: hosts.hostid, data: hosts.data })
      .from(hosts)
      .where(and(gt(hosts.hostid, afterHostid), ne(hosts.data, '')))
      .orderBy(asc(hosts.hostid))
      .limit(limit);
  },
  async insert(host) {
    const [row] = await db.insert(hosts).values(host).returning({ hostid: hosts.hostid });
    return row!.hostid;
  },
  async sharedByNickname(nickname) {
    const used = sql`select 1 from ${destinationHosts} dh where dh.hostid = ${hosts.hostid}`;
    const [row] = await db
      .select({ hostid: hosts.hostid })
      .from(hosts)
      .where(sql`${hosts.nickname} = ${nickname} and exists (${used})`)
      .orderBy(asc(hosts.hostid))
      .limit(1);
    return row?.hostid ?? null;
  },
  async associate(destination, hostid, priority) {
    await db.insert(destinationHosts).values({ destination, hostid, priority }).onConflictDoNothing();
  },
  async ofDestinations(names) {
    if (names.length === 0) return [];
    const rows = await db
      .select({ destination: destinationHosts.destination, priority: destinationHosts.priority, host: hosts })
      .from(destinationHosts)
      .innerJoin(hosts, eq(hosts.hostid, destinationHosts.hostid))
      .where(inArray(destinationHosts.destination, names))
      .orderBy(asc(destinationHosts.destination), asc(destinationHosts.priority), asc(hosts.hostid));
    return rows;
  },
});

export const referenceRepo = (db: Database): ReferenceRepo => ({
  async ecusers(names) {
    if (names.length === 0) return [];
    return db.select().from(ecusers).where(inArray(ecusers.name, names)).orderBy(asc(ecusers.name));
  },
  async methods(names) {
    if (names.length === 0) return [];
    const rows = await db
      .select({ method: transferMethods, module: ectransModules })
      .from(transferMethods)
      .leftJoin(ectransModules, eq(ectransModules.name, transferMethods.ectransModuleName))
      .where(inArray(transferMethods.name, names))
      .orderBy(asc(transferMethods.name));
    return rows.map((r) => ({ ...r.method, ectransModule: r.module }));
  },
  async ensureEcuser(ecuser) {
    await db.insert(ecusers).values(ecuser).onConflictDoNothing();
  },
  async ensureModule(module) {
    await db.insert(ectransModules).values(module).onConflictDoNothing();
  },
  async ensureMethod(method) {
    await db.insert(transferMethods).values(method).onConflictDoNothing();
  },
});
