import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/pglite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rowsOf } from '../../db/client.ts';
import { preparingClient } from '../../db/pglite-statements.ts';

let pg: PGlite;
let client: PGlite;
let db: ReturnType<typeof drizzle>;

beforeEach(async () => {
  pg = await PGlite.create();
  await pg.exec(
    'create table items (id int primary key, label text, at timestamptz, tags text[], doc jsonb, n bigint)',
  );
  client = preparingClient(pg);
  db = drizzle(client);
});
afterEach(() => pg.close());

const prepared = async () =>
  (await pg.query<{ statement: string }>('select statement from pg_prepared_statements order by statement')).rows.map(
    (r) => r.statement,
  );
const count = async () => (await pg.query<{ n: number }>('select count(*)::int as n from items')).rows[0]!.n;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the embedded database keeps data statements prepared', () => {
  it('parses a statement once and runs it again with other values', async () => {
    for (let id = 1; id <= 3; id++)
      await db.execute(sql`insert into items (id, label) values (${id}, ${`item ${id}`})`);
    for (const id of [1, 2, 3]) {
      const [row] = rowsOf<{ label: string }>(await db.execute(sql`select label from items where id = ${id}`));
      expect(row!.label).toBe(`item ${id}`);
    }
    expect(await prepared()).toEqual([
      'insert into items (id, label) values ($1, $2)',
      'select label from items where id = $1',
    ]);
  });

  it('gives back what PGlite itself gives, for each type of parameter and column', async () => {
    const insert = 'insert into items (id, label, at, tags, doc, n) values ($1, $2, $3, $4, $5, $6) returning *';
    const row = (id: number) => [
      id,
      null,
      new Date('2026-11-29T03:04:05.678Z'),
      ['a', 'b,c', 'd"e', ''],
      { k: [1, 'x'], s: "it's" },
      9007199254740993n,
    ];
    const ours = await client.query(insert, row(1));
    const its = await pg.query(insert, row(2));
    expect(ours.rows).toEqual([{ ...its.rows[0]!, id: 1 }]);
    expect(ours.fields).toEqual(its.fields);
    expect(ours.affectedRows).toBe(its.affectedRows);
    for (const rowMode of ['array', 'object'] as const) {
      const select = 'select * from items where id = any($1) order by id';
      expect(await client.query(select, [[1, 2]], { rowMode })).toEqual(await pg.query(select, [[1, 2]], { rowMode }));
    }
    expect(await prepared()).toContain('select * from items where id = any($1) order by id');
  });

  it("leaves what isn't a data statement to PGlite", async () => {
    await db.execute(sql`create index items_label on items (label)`);
    await db.transaction(async (tx) => {
      await tx.execute(sql`insert into items (id) values (${1})`);
      await tx.transaction(async (inner) => void (await inner.execute(sql`insert into items (id) values (${2})`)));
    });
    expect(await count()).toBe(2);
    expect(await prepared()).toEqual(['insert into items (id) values ($1)']);
  });

  it('raises a failing statement with its code, and the next one runs', async () => {
    await db.execute(sql`insert into items (id) values (${1})`);
    const failed = await db.execute(sql`insert into items (id) values (${1})`).catch((e: unknown) => e);
    expect(failed).toMatchObject({ cause: { code: '23505' } });
    const wrongType = await db.execute(sql`select * from items where id = ${'not a number'}`).catch((e) => e);
    expect(wrongType).toMatchObject({ cause: { code: '22P02' } });
    const planFailed = await db.execute(sql`select nothing from items where id = ${1}`).catch((e) => e);
    expect(planFailed).toMatchObject({ cause: { code: '42703' } });
    await db.execute(sql`insert into items (id) values (${2})`);
    expect(await count()).toBe(2);
  });

  it('rolls back the whole transaction when one of its statements fails', async () => {
    await db.execute(sql`insert into items (id) values (${1})`);
    const failed = await db
      .transaction(async (tx) => {
        await tx.execute(sql`insert into items (id, label) values (${2}, ${'kept?'})`);
        await tx.execute(sql`insert into items (id, label) values (${1}, ${'taken'})`);
      })
      .catch((e: unknown) => e);
    expect(failed).toMatchObject({ cause: { code: '23505' } });
    expect(await count()).toBe(1);
    await db.execute(sql`insert into items (id, label) values (${2}, ${'after'})`);
    expect(await count()).toBe(2);
  });

  it('runs a statement from outside a transaction only once the transaction has ended', async () => {
    let outside: Promise<unknown> | undefined;
    await db
      .transaction(async (tx) => {
        await tx.execute(sql`insert into items (id) values (${1})`);
        outside = db.execute(sql`select count(*)::int as n from items where id > ${0}`);
        await sleep(50);
        tx.rollback();
      })
      .catch(() => undefined);
    expect(rowsOf<{ n: number }>(await outside)).toEqual([{ n: 0 }]);
  });

  it('keeps at most 500 statements, forgetting the least recently run', async () => {
    await db.execute(sql`insert into items (id) values (${0})`);
    for (let i = 1; i <= 520; i++) {
      await db.execute(sql`select ${sql.raw(String(i))} as k from items where id = ${0}`);
      await db.execute(sql`select id from items where id = ${i}`);
    }
    const statements = await prepared();
    expect(statements).toHaveLength(500);
    expect(statements).toContain('select id from items where id = $1');
    expect(statements).not.toContain('select 1 as k from items where id = $1');
    expect(statements).toContain('select 520 as k from items where id = $1');
    const [row] = rowsOf<{ k: number }>(await db.execute(sql`select 1 as k from items where id = ${0}`));
    expect(row!.k).toBe(1);
  });
});
