import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DbHandle, jsonColumn, rowsOf } from '../../db/client.ts';
import { disseminationRepo } from '../../db/repositories/dissemination.ts';
import { freshDatabase } from '../support/database.ts';

/**
 * The view a destination's shown status is decided from is read after every batch of ends: its
 * cost must not grow with the transfers of other destinations, however many wait.
 */
const DESTINATIONS = 32;
const TRANSFERS = 20_000;
let handle: DbHandle;

beforeAll(async () => {
  handle = await freshDatabase();
  const statements = `
    insert into destinations (name, country_iso, type, status_code, max_connections)
    select 'SV_' || g, 'gb', 1, 'WAIT', 8 from generate_series(1, ${DESTINATIONS}) g;
    insert into data_files (id, source, size, registered_by)
    select g, '/x', 1, 'test' from generate_series(1, ${TRANSFERS}) g;
    insert into data_transfers (data_file_id, destination, target, priority, status, attempt, message,
      scheduled_at, expires_at, queue_at)
    select g, 'SV_' || (1 + g % ${DESTINATIONS}), 'f' || g, 99,
      case when g <= ${TRANSFERS / 2} then 'DONE' when g <= ${TRANSFERS / 2 + 8 * DESTINATIONS} then 'EXEC'
        else 'WAIT' end,
      -- SV_2 resends a failed file, every other destination sends first attempts.
      case when g % ${DESTINATIONS} = 1 and g > ${TRANSFERS / 2} then 2 else 1 end,
      case when g % ${DESTINATIONS} = 1 and g > ${TRANSFERS / 2} then 'refused' end,
      now(), now() + interval '1 day', now() - interval '1 minute'
    from generate_series(1, ${TRANSFERS}) g;
    -- SV_3 sends nothing and has nothing due.
    delete from data_transfers where destination = 'SV_3' and status <> 'DONE';
    analyze`;
  for (const statement of statements.split(';')) await handle.db.execute(sql.raw(statement));
});
afterAll(() => handle.close());

/** Rows of data_transfers a statement read (returned or filtered out), from its plan as run. */
function transferRowsRead(plan: PlanNode): number {
  const own =
    plan['Relation Name'] === 'data_transfers'
      ? ((plan['Actual Rows'] ?? 0) + (plan['Rows Removed by Filter'] ?? 0)) * (plan['Actual Loops'] ?? 1)
      : 0;
  return own + (plan.Plans ?? []).reduce((n, p) => n + transferRowsRead(p), 0);
}
type PlanNode = {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Rows Removed by Filter'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
};

describe("a destination's scheduler view", () => {
  it('tells sending, resending and due apart', async () => {
    const views = await disseminationRepo(handle.db).schedulerViews(['SV_1', 'SV_2', 'SV_3'], new Date());
    const of = (name: string) => {
      const { sending, resending, due } = views.get(name)!;
      return { sending, resending, due };
    };
    expect(of('SV_1')).toEqual({ sending: true, resending: false, due: true });
    expect(of('SV_2')).toEqual({ sending: true, resending: true, due: true });
    expect(of('SV_3')).toEqual({ sending: false, resending: false, due: false });
  });

  it('reads only the transfers of the destinations it is asked for', async () => {
    const statements: Array<{ sql: string; params: unknown[] }> = [];
    const session = (handle.db as unknown as { _: { session: { prepareQuery: (...a: unknown[]) => unknown } } })._
      .session;
    const prepare = session.prepareQuery;
    session.prepareQuery = (query: unknown, ...rest: unknown[]) => {
      statements.push(query as { sql: string; params: unknown[] });
      return prepare.call(session, query, ...rest);
    };
    try {
      await disseminationRepo(handle.db).schedulerViews(['SV_1', 'SV_2', 'SV_3'], new Date());
    } finally {
      session.prepareQuery = prepare;
    }
    const [statement] = statements;
    // Its parameters are a JSON list of names and a time: written in place for EXPLAIN.
    const inlined = statement!.sql.replace(/\$(\d+)/g, (_, i) => `'${String(statement!.params[Number(i) - 1])}'`);
    const [row] = rowsOf<{ 'QUERY PLAN': unknown }>(
      await handle.db.execute(sql.raw(`explain (analyze, format json) ${inlined}`)),
    );
    const [top] = jsonColumn<Array<{ Plan: PlanNode }>>(row!['QUERY PLAN']);
    // Per destination: its transfers being sent (8), and the first due found.
    expect(transferRowsRead(top!.Plan)).toBeLessThan(1000);
  });
});
