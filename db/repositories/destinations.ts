import { and, asc, count, eq, getTableColumns, inArray, type SQL, sql } from 'drizzle-orm';
import { isInt32 } from '../../core/common/int32.ts';
import type { DestinationFilter } from '../../core/destinations/model.ts';
import type { DestinationRepo } from '../../core/destinations/ports.ts';
import { type Database, rowsOf } from '../client.ts';
import { runPrepared } from '../prepared.ts';
import {
  countries,
  destinationAliases,
  destinations,
  destinationTypes,
  incomingAssociations,
  listVersions,
} from '../schema.ts';
import { updateMails } from './mail-outbox.ts';

// The list entry is a rendering of the other columns, and the creation time is the portal's (a
// bucket's date): neither is part of the record the API and backups show.
const { listEntry, createdAt: _created, ...recordColumns } = getTableColumns(destinations);

function filtered({ iso, userId, type, name }: DestinationFilter): SQL | undefined {
  const conditions: SQL[] = [];
  if (iso !== undefined) conditions.push(eq(destinations.countryIso, iso));
  if (type !== undefined) conditions.push(eq(destinations.type, type));
  if (name !== undefined) conditions.push(eq(destinations.name, name));
  if (userId !== undefined) {
    const associated = sql`select 1 from ${incomingAssociations} a where a.destination = ${destinations.name}`;
    conditions.push(sql`exists (${associated} and a.user_id = ${userId})`);
  }
  return and(...conditions);
}

/** An update of a destination, with its `update` mail (mailOnUpdate) in the same statement. */
async function changeDestination(db: Database, name: string, set: SQL, reason: string) {
  const rows = rowsOf<{ name: string }>(
    await db.execute(sql`
      with changed as (update destinations set ${set} where name = ${name} returning *),
      mail as (${updateMails(sql`changed`, reason)})
      select name from changed`),
  );
  return rows.length === 1;
}

export const destinationRepo = (db: Database): DestinationRepo => ({
  async exists(name) {
    return (
      (await db.select({ name: destinations.name }).from(destinations).where(eq(destinations.name, name))).length > 0
    );
  },
  async get(name) {
    const [row] = await db.select(recordColumns).from(destinations).where(eq(destinations.name, name));
    return row ?? null;
  },
  async list(filter) {
    return db.select(recordColumns).from(destinations).where(filtered(filter)).orderBy(asc(destinations.name));
  },
  async listView(filter, knownVersion) {
    // Aggregated in the order of an index scan: string_agg(... order by name) sorts the wide
    // entries themselves, which costs more than the scan. The version and the entries are read
    // in one statement, so from one snapshot; the subquery runs only when it is needed.
    const ordered = db
      .select({ entry: sql<string>`${listEntry}`.as('entry') })
      .from(destinations)
      .where(filtered(filter))
      .orderBy(asc(destinations.name));
    const [row] = await runPrepared(
      db
        .select({
          version: listVersions.version,
          entries: sql<string | null>`case when ${listVersions.version} = ${knownVersion ?? -1} then null
          else coalesce((select string_agg(o.entry, ',') from (${ordered}) o), '') end`,
        })
        .from(listVersions)
        .where(eq(listVersions.name, 'destinations')),
      'destinationListView',
    );
    if (!row) throw new Error('list_versions has no destinations row: migrations incomplete');
    return { version: row.version, view: row.entries === null ? null : `[${row.entries}]` };
  },
  async names() {
    return (await db.select({ name: destinations.name }).from(destinations).orderBy(asc(destinations.name))).map(
      (r) => r.name,
    );
  },
  async types() {
    return db.select().from(destinationTypes).orderBy(asc(destinationTypes.position), asc(destinationTypes.id));
  },
  async typeExists(id) {
    // A 32-bit integer column: a larger id names no type (instead of a database error).
    if (!isInt32(id)) return false;
    const [row] = await db.select({ n: count() }).from(destinationTypes).where(eq(destinationTypes.id, id));
    return (row?.n ?? 0) > 0;
  },
  async countriesInUse() {
    return db
      .select({ iso: countries.iso, name: countries.name })
      .from(countries)
      .where(sql`exists (select 1 from ${destinations} d where d.country_iso = ${countries.iso})`)
      .orderBy(asc(countries.iso));
  },
  async setStatus(name, statusCode) {
    return changeDestination(
      db,
      name,
      sql`status_code = ${statusCode}, scheduler_status = null`,
      `status set to ${statusCode}`,
    );
  },
  async setData(name, data) {
    // The options may hold secrets: the mail says that they changed, not what they are.
    return changeDestination(db, name, sql`data = ${data}`, 'options changed');
  },
  async insert(destination) {
    const rows = await db
      .insert(destinations)
      .values(destination)
      .onConflictDoNothing()
      .returning({ name: destinations.name });
    return rows.length === 1;
  },
  async aliasesFrom(names) {
    if (names.length === 0) return [];
    return db
      .select({ aliasFrom: destinationAliases.aliasFrom, aliasTo: destinationAliases.aliasTo })
      .from(destinationAliases)
      .where(inArray(destinationAliases.aliasFrom, names))
      .orderBy(asc(destinationAliases.aliasFrom), asc(destinationAliases.aliasTo));
  },
  async addAlias(aliasFrom, aliasTo) {
    await db.insert(destinationAliases).values({ aliasFrom, aliasTo }).onConflictDoNothing();
  },
});
