import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DbHandle, openPostgres, rowsOf } from '../../db/client.ts';
import { migrate } from '../../db/migrate.ts';
import { bundledMigrations } from '../../db/migrations/bundle.generated.ts';
import { openPglite } from '../../db/pglite.ts';
import { onPostgres } from '../support/database.ts';

// The migrations are part of the code (db/migrations/bundle.generated.ts); databases migrated from the
// folder by drizzle's own migrators must find nothing new in them.

const migrationsFolder = fileURLToPath(new URL('../../db/migrations', import.meta.url));
const fromFolder = () => readMigrationFiles({ migrationsFolder });
const script = (): Promise<{ renderBundle(folder?: string): string; BUNDLE: string }> =>
  import(new URL('../../db/bundle-migrations.mjs', import.meta.url).href);

type Applied = { hash: string; created_at: string };
const applied = async (handle: DbHandle) =>
  rowsOf<Applied>(
    await handle.db.execute(sql`select hash, created_at::text from drizzle.__drizzle_migrations order by id`),
  );
const tables = async (handle: DbHandle) =>
  rowsOf<{ name: string }>(
    await handle.db.execute(
      sql`select table_name as name from information_schema.tables where table_schema = 'public' order by 1`,
    ),
  ).map((r) => r.name);

/** The journal and files of the first `count` migrations, as a folder drizzle's migrators read. */
function truncatedFolder(count: number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-migrations-'));
  const journal = JSON.parse(fs.readFileSync(path.join(migrationsFolder, 'meta/_journal.json'), 'utf8'));
  journal.entries = journal.entries.slice(0, count);
  fs.mkdirSync(path.join(dir, 'meta'));
  fs.writeFileSync(path.join(dir, 'meta/_journal.json'), JSON.stringify(journal));
  for (const entry of journal.entries) {
    fs.copyFileSync(path.join(migrationsFolder, `${entry.tag}.sql`), path.join(dir, `${entry.tag}.sql`));
  }
  return dir;
}

describe('the bundled migrations', () => {
  it('are up to date with db/migrations', async () => {
    const { renderBundle, BUNDLE } = await script();
    const committed = fs.readFileSync(BUNDLE, 'utf8');
    expect(committed === renderBundle(), 'db/migrations changed: run `node db/bundle-migrations.mjs`').toBe(true);
  });

  it("are what drizzle's readMigrationFiles reads from the folder, migration by migration", () => {
    const expected = fromFolder();
    expect(bundledMigrations.length).toBe(expected.length);
    expect(expected.length).toBeGreaterThan(0);
    for (const [i, m] of expected.entries()) {
      const bundled = bundledMigrations[i]!;
      expect(bundled.folderMillis, `migration ${i}`).toBe(m.folderMillis);
      expect(bundled.hash, `migration ${i}`).toBe(m.hash);
      expect(bundled.bps, `migration ${i}`).toBe(m.bps);
      expect(bundled.sql, `migration ${i}`).toEqual(m.sql);
    }
  });

  it('keeps backticks, backslashes, `${`, carriage returns and long lines as they are', async () => {
    const { renderBundle } = await script();
    const dir = truncatedFolder(0);
    // A backtick, a backslash, `${` and a carriage return, which a template literal would otherwise read as its own.
    const odd = `select \`x\`, 'a\\b', $\${y} as "z";\r\n${'-- long '.repeat(40)}\nselect 1;\n`;
    const journal = {
      version: '7',
      dialect: 'postgresql',
      entries: [{ idx: 0, when: 1, tag: 'odd', breakpoints: true }],
    };
    fs.writeFileSync(path.join(dir, 'meta/_journal.json'), JSON.stringify(journal));
    fs.writeFileSync(path.join(dir, 'odd.sql'), `${odd}--> statement-breakpoint\nselect 2;`);
    const text = renderBundle(dir);
    expect(Math.max(...text.split('\n').map((l) => l.length))).toBeLessThanOrEqual(120);
    const module = path.join(dir, 'bundle.generated.ts');
    fs.writeFileSync(module, text);
    const { bundledMigrations: rendered } = await import(module);
    expect(rendered).toEqual(readMigrationFiles({ migrationsFolder: dir }));
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('migrating an embedded database', () => {
  const handles: DbHandle[] = [];
  const open = async () => {
    const handle = await openPglite();
    handles.push(handle);
    return handle;
  };
  afterAll(async () => {
    for (const handle of handles) await handle.close();
  });

  it("leaves one migrated from the folder by drizzle's migrator as it was", async () => {
    const handle = await open();
    const { migrate: fromDisk } = await import('drizzle-orm/pglite/migrator');
    await fromDisk(handle.db as never, { migrationsFolder });
    const before = await applied(handle);
    const schemaBefore = await tables(handle);
    expect(before.length).toBe(fromFolder().length);
    await migrate(handle);
    expect(await applied(handle)).toEqual(before);
    expect(await tables(handle)).toEqual(schemaBefore);
  });

  it("applies what one migrated from an older folder lacks, recorded as drizzle's migrator would", async () => {
    const handle = await open();
    const older = truncatedFolder(10);
    const { migrate: fromDisk } = await import('drizzle-orm/pglite/migrator');
    await fromDisk(handle.db as never, { migrationsFolder: older });
    fs.rmSync(older, { recursive: true, force: true });
    expect((await applied(handle)).length).toBe(10);
    await migrate(handle);
    const expected = fromFolder().map((m) => ({ hash: m.hash, created_at: String(m.folderMillis) }));
    expect(await applied(handle)).toEqual(expected);
  });

  it('migrates a fresh one fully, and a second time changes nothing', async () => {
    const handle = await open();
    await migrate(handle);
    const expected = fromFolder().map((m) => ({ hash: m.hash, created_at: String(m.folderMillis) }));
    expect(await applied(handle)).toEqual(expected);
    expect(await tables(handle)).toContain('destinations');
    await migrate(handle);
    expect(await applied(handle)).toEqual(expected);
  });
});

describe.skipIf(!onPostgres())('migrating a Postgres database', () => {
  const name = `ecpds_bundle_${Date.now().toString(36)}`;
  let admin: postgres.Sql;
  let handle: DbHandle;
  beforeAll(async () => {
    admin = postgres(process.env.TEST_DATABASE_URL!, { max: 1, onnotice: () => undefined });
    await admin.unsafe(`create database "${name}"`);
    const target = new URL(process.env.TEST_DATABASE_URL!);
    target.pathname = `/${name}`;
    handle = openPostgres(target.toString(), { max: 1 });
  });
  afterAll(async () => {
    await handle?.close();
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
  });

  it("leaves one migrated from the folder by drizzle's migrator as it was", async () => {
    const { migrate: fromDisk } = await import('drizzle-orm/postgres-js/migrator');
    await fromDisk(handle.db as never, { migrationsFolder });
    const before = await applied(handle);
    expect(before.length).toBe(fromFolder().length);
    await migrate(handle);
    expect(await applied(handle)).toEqual(before);
  });
});
