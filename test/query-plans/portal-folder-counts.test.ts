import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../db/client.ts';
import { portalRepo } from '../../db/repositories/portal.ts';
import { freshDatabase } from '../support/database.ts';
import { nodesOf, plansOf, scannedTables, statementsOf } from '../support/plans.ts';

/**
 * A folder's count of files in the portal's pages (db/repositories/portal-folders.ts) is the number
 * of paths the listing shows below it, at any depth (one per path, whatever its transfers), counted
 * up to a cap: a folder of many files is read up to the cap through the index of files by path,
 * never the tables whole nor every file below it, on tables never analyzed.
 */
const BIG = 5000;
const CAP = 1000;
let handle: DbHandle;

/** The small folder's paths: what each one's transfers are, oldest first. */
const SMALL: Array<[string, string]> = [
  // Two transfers of one path (each its unique name): one file.
  ['dup/a', 'DONE'],
  ['dup/a', 'DONE'],
  ['dup/b', 'DONE'],
  // Its newest deleted: the one before shows, as in the listing.
  ['dup/c', 'DONE'],
  ['dup/c', 'DONE deleted'],
  ['dup/sub/deep', 'DONE'],
  ['dup/gone', 'DONE deleted'],
  ['dup/old', 'DONE expired'],
  ['dup/later', 'DONE later'],
  ['dup/init', 'INIT'],
  ['dup/held', 'HOLD alice'],
  ['dup/held-bob', 'HOLD bob'],
  // Its neighbours in byte order, none of them below `dup/`.
  ['dup.x/f', 'DONE'],
  ['dup0/f', 'DONE'],
  ['du/f', 'DONE'],
  ['dup', 'DONE'],
];

beforeAll(async () => {
  handle = await freshDatabase();
  // BIG files below `big/` (in subdirectories of 100), then the small folder's.
  const statements = `
    alter table data_transfers set (autovacuum_enabled = false);
    alter table data_files set (autovacuum_enabled = false);
    insert into destinations (name, country_iso, type) values ('TREE', 'gb', 1), ('NONE', 'gb', 1);
    insert into data_files (id, source, size, registered_by, created_at)
    select g, '/data/' || g, 1, 'test', now() - interval '1 day' from generate_series(1, ${BIG}) g;
    insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at)
    select g, 'TREE', 'big/d' || (g / 100) || '/f' || g, 99, 'DONE', now() - interval '1 hour', now() + interval '1 day'
    from generate_series(1, ${BIG}) g`;
  for (const statement of statements.split(';')) await handle.db.execute(sql.raw(statement));
  for (const [i, [target, how]] of SMALL.entries()) {
    const id = BIG + 1 + i;
    const [status, what] = how.split(' ');
    const by = what === 'alice' || what === 'bob' ? `portal:${what}` : 'test';
    await handle.db.execute(sql`
      insert into data_files (id, source, size, registered_by, created_at, deleted_at)
      values (${id}, ${`/small/${i}`}, 1, ${by}, now(), case when ${what === 'deleted'}::boolean then now() end)`);
    await handle.db.execute(sql`
      insert into data_transfers (data_file_id, destination, target, unique_name, priority, status, scheduled_at,
        expires_at)
      values (${id}, 'TREE', ${target}, ${String(id)}, 99, ${status},
        now() + ${what === 'later' ? '1 hour' : '-1 hour'}::interval,
        now() + ${what === 'expired' ? '-1 minute' : '1 day'}::interval)`);
  }
});
afterAll(() => handle.close());

describe("a folder's count of files", () => {
  const repo = () => portalRepo(handle.db);
  const now = () => new Date();
  const folders = [
    { destination: 'TREE', path: 'dup' },
    { destination: 'TREE', path: 'dup/sub' },
    { destination: 'TREE', path: 'big' },
    { destination: 'TREE', path: 'big/d7' },
    { destination: 'TREE', path: '' },
    { destination: 'TREE', path: 'nothing' },
    { destination: 'NONE', path: '' },
  ];

  it('is its paths shown, at any depth, each once, up to the cap and one more', async () => {
    // dup: a, b, c, sub/deep; not the deleted, expired, later, INIT or held ones, nor the neighbours.
    expect(await repo().folderCounts(folders, now(), null, CAP)).toEqual([4, 1, CAP + 1, 100, CAP + 1, 0, 0]);
    // Alice sees her held file, not Bob's.
    expect(await repo().folderCounts(folders.slice(0, 1), now(), 'portal:alice', CAP)).toEqual([5]);
    expect(await repo().folderCounts(folders.slice(0, 2), now(), 'portal:alice', 3)).toEqual([4, 1]);
    expect(await repo().folderCounts([], now(), null, CAP)).toEqual([]);
    // The same files as the listing's of all levels.
    for (const viewer of [null, 'portal:alice', 'portal:bob']) {
      const listed = await repo().files('TREE', 'dup/', now(), { after: null, limit: 100 }, viewer);
      const [count] = await repo().folderCounts(folders.slice(0, 1), now(), viewer, CAP);
      expect(count, String(viewer)).toBe(listed.length);
    }
  });

  it('reads a large folder up to its cap through the index, never the tables whole', async () => {
    const big = [{ destination: 'TREE', path: 'big' }];
    const statements = await statementsOf(handle.db, () => repo().folderCounts(big, now(), null, CAP));
    expect(statements).toHaveLength(1);
    const { custom, generic } = await plansOf(handle.db, statements[0]!);
    for (const plan of [custom, generic]) {
      expect(scannedTables(plan).filter((t) => t === 'data_transfers' || t === 'data_files')).toEqual([]);
      for (const table of ['data_transfers', 'data_files']) {
        const nodes = nodesOf(plan).filter((n) => n['Relation Name'] === table);
        const read = nodes.reduce(
          (sum, n) => sum + ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1),
          0,
        );
        // The cap and the one more that says there are more: not the folder's BIG files.
        expect(read, table).toBeGreaterThan(0);
        expect(read, table).toBeLessThanOrEqual(CAP + 1);
      }
    }
  });
});
