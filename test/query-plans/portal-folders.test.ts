import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../db/client.ts';
import { portalRepo } from '../../db/repositories/portal.ts';
import { freshDatabase } from '../support/database.ts';
import { nodesOf, plansOf, scannedTables, statementsOf } from '../support/plans.ts';

/**
 * A folder's time in the portal (its newest file's, db/repositories/portal-folders.ts) is read
 * through the index of files by directory, with a seek per directory below the folder: never the
 * tables read whole, nor every file below the folder, on tables never analyzed.
 */
const DIRECTORIES = 100;
const PER_DIRECTORY = 100;
const TOP = 2000;
const FILES = DIRECTORIES * PER_DIRECTORY + TOP;
/** When file `g` was registered: later for higher `g`. */
const registered = (g: number) => new Date(Date.UTC(2020, 0, 1) + g * 60_000);
let handle: DbHandle;

beforeAll(async () => {
  handle = await freshDatabase();
  // Files 1..TOP at the top; then DIRECTORIES directories `dNNN/` of PER_DIRECTORY files each, the
  // newest of each one held (HOLD) by `portal:alice` and the one before it deleted.
  const target = `case when g <= ${TOP} then 'f' || g
    else 'd' || lpad(((g - ${TOP} - 1) / ${PER_DIRECTORY})::text, 3, '0') || '/sub/f' || g end`;
  const statements = `
    alter table data_transfers set (autovacuum_enabled = false);
    alter table data_files set (autovacuum_enabled = false);
    insert into destinations (name, country_iso, type) values ('TREE', 'gb', 1), ('NONE', 'gb', 1);
    update destinations set created_at = '2019-01-01T00:00:00Z' where name = 'NONE';
    insert into data_files (id, source, size, registered_by, created_at, deleted_at)
    select g, '/data/' || g, 1, case when ${held('g')} then 'portal:alice' else 'test' end,
      timestamptz '2020-01-01T00:00:00Z' + g * interval '1 minute',
      case when ${held('g + 1')} then now() end
    from generate_series(1, ${FILES}) g;
    insert into data_transfers (data_file_id, destination, target, priority, status, scheduled_at, expires_at)
    select g, 'TREE', ${target}, 99, case when ${held('g')} then 'HOLD' else 'DONE' end,
      now() - interval '1 hour', now() + interval '1 day'
    from generate_series(1, ${FILES}) g`;
  for (const statement of statements.split(';')) await handle.db.execute(sql.raw(statement));
});
afterAll(() => handle.close());

/** Whether file `g` (an SQL expression) is the newest of its directory. */
function held(g: string) {
  return `(${g} > ${TOP} and (${g} - ${TOP}) % ${PER_DIRECTORY} = 0)`;
}
/** The newest file of directory `d` that others see: neither the held one nor the deleted one before it. */
const newestShown = (d: number) => TOP + (d + 1) * PER_DIRECTORY - 2;
const name = (d: number) => `d${String(d).padStart(3, '0')}`;

describe("a folder's time", () => {
  const repo = () => portalRepo(handle.db);
  const now = () => new Date();
  const folders = [
    { destination: 'TREE', path: '' },
    ...Array.from({ length: DIRECTORIES }, (_, d) => ({ destination: 'TREE', path: name(d) })),
    { destination: 'TREE', path: `${name(7)}/sub` },
    { destination: 'TREE', path: 'f1' },
    { destination: 'NONE', path: '' },
  ];

  it("is its newest file's shown, at any depth; an empty destination's, its creation", async () => {
    const others = await repo().folderTimes(folders, now());
    expect(others[0]).toEqual(registered(newestShown(DIRECTORIES - 1)));
    for (let d = 0; d < DIRECTORIES; d++) expect(others[1 + d], name(d)).toEqual(registered(newestShown(d)));
    expect(others.slice(-3)).toEqual([registered(newestShown(7)), null, new Date('2019-01-01T00:00:00Z')]);
    // The uploader sees its held file, the newest of its directory.
    const own = await repo().folderTimes(folders.slice(1, 2), now(), 'portal:alice');
    expect(own).toEqual([registered(TOP + PER_DIRECTORY)]);
  });

  it('is read with a seek per directory, never the tables whole nor every file', async () => {
    const statements = await statementsOf(handle.db, () => repo().folderTimes(folders, now()));
    expect(statements).toHaveLength(1);
    const { custom, generic } = await plansOf(handle.db, statements[0]!);
    for (const plan of [custom, generic]) {
      expect(scannedTables(plan).filter((t) => t === 'data_transfers' || t === 'data_files')).toEqual([]);
      const transfers = nodesOf(plan).filter((n) => n['Relation Name'] === 'data_transfers');
      const read = transfers.reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
      // Each folder's directories once to find them and about once for their newest: far fewer than its files.
      expect(read).toBeLessThan(FILES / 10);
    }
  });
});
