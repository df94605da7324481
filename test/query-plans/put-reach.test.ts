import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../db/client.ts';
import { dataFilePutRepo } from '../../db/repositories/data-file-puts.ts';
import { freshDatabase } from '../support/database.ts';
import { plansOf, scannedTables, statementsOf } from '../support/plans.ts';

/**
 * A put reads its destination and the destinations its aliases reach. An installation that never
 * wrote an alias never has `destination_aliases` analyzed (autovacuum analyzes only what changes,
 * and the embedded database has no autovacuum): the put must still cost one lookup per destination
 * reached, not a read of every destination.
 */
const DESTINATIONS = 10_000;
let handle: DbHandle;

beforeAll(async () => {
  handle = await freshDatabase();
  const statements = `
    alter table destinations set (autovacuum_enabled = false);
    alter table destination_aliases set (autovacuum_enabled = false);
    alter table data_transfers set (autovacuum_enabled = false);
    insert into destinations (name, country_iso, type)
    select 'PR_' || lpad(g::text, 6, '0'), 'gb', 1 from generate_series(1, ${DESTINATIONS}) g`;
  for (const statement of statements.split(';')) await handle.db.execute(sql.raw(statement));
});
afterAll(() => handle.close());

const reachOf = (name: string) => dataFilePutRepo(handle.db).putReach(name);

async function expectLookupsOnly(name: string) {
  const [statement, ...others] = await statementsOf(handle.db, () => reachOf(name));
  expect(others).toEqual([]);
  const { custom, generic } = await plansOf(handle.db, statement!);
  expect(scannedTables(custom)).not.toContain('destinations');
  expect(scannedTables(generic)).not.toContain('destinations');
}

describe("the put's reach of destinations, on tables never analyzed", () => {
  it('reads the destination without aliases through its key', async () => {
    await expectLookupsOnly('PR_000005');
  });

  it('walks a chain that ends in a cycle, each destination once, through the keys', async () => {
    await handle.db.execute(
      sql.raw(`insert into destination_aliases (alias_from, alias_to) values
        ('PR_000010', 'PR_000011'), ('PR_000011', 'PR_000012'), ('PR_000012', 'PR_000011'),
        ('PR_000012', 'PR_000013'), ('PR_000013', 'PR_000010')`),
    );
    const reach = await reachOf('PR_000010');
    expect([...reach!.keys()].sort()).toEqual(['PR_000010', 'PR_000011', 'PR_000012', 'PR_000013']);
    expect(reach!.get('PR_000012')!.aliases).toEqual(['PR_000011', 'PR_000013']);
    expect(await reachOf('PR_000011').then((r) => [...r!.keys()].sort())).toEqual([
      'PR_000010',
      'PR_000011',
      'PR_000012',
      'PR_000013',
    ]);
    expect(await reachOf('PR_NONE')).toBeNull();
    await expectLookupsOnly('PR_000010');
  });

  it('still so once what an installation writes is analyzed, and the aliases are not', async () => {
    await handle.db.execute(sql.raw('analyze destinations'));
    await handle.db.execute(sql.raw('analyze data_transfers'));
    await expectLookupsOnly('PR_000005');
    await expectLookupsOnly('PR_000010');
  });
});
