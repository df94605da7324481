import { sql } from 'drizzle-orm';
import { type Database, jsonColumn, rowsOf } from '../../db/client.ts';

/** A node of a plan as EXPLAIN (ANALYZE, FORMAT JSON) gives it. */
export type PlanNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Rows Removed by Filter'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
};
export interface Statement {
  sql: string;
  params: unknown[];
}

type Session = { prepareQuery: (query: Statement, ...rest: unknown[]) => unknown };
const sessionOf = (db: Database) => (db as unknown as { _: { session: Session } })._.session;

/**
 * The statements `work` runs through the database's sessions, in order, with their parameters: those
 * of its transactions too (their sessions share the database session's prototype).
 */
export async function statementsOf(db: Database, work: () => Promise<unknown>): Promise<Statement[]> {
  const statements: Statement[] = [];
  const sessions = Object.getPrototypeOf(sessionOf(db)) as Session;
  const prepare = sessions.prepareQuery;
  sessions.prepareQuery = function (this: Session, query: Statement, ...rest: unknown[]) {
    statements.push({ sql: query.sql, params: [...query.params] });
    return prepare.call(this, query, ...rest);
  };
  try {
    await work();
  } finally {
    sessions.prepareQuery = prepare;
  }
  return statements;
}

const quoted = (text: string) => `'${text.replaceAll("'", "''")}'`;
/** A parameter written as an untyped literal, whose type Postgres infers as it does for the driver's. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return quoted(value.toISOString());
  if (Array.isArray(value)) return quoted(`{${value.map((v) => JSON.stringify(String(v))).join(',')}}`);
  if (typeof value === 'object') return quoted(JSON.stringify(value));
  return quoted(String(value));
}

class Undone extends Error {}
let probes = 0;

/**
 * The plans a prepared statement runs with, as run (EXPLAIN ANALYZE, in a transaction rolled back
 * after): `custom`, planned for its parameters' values, and `generic`, the plan Postgres may keep for
 * any values after a few runs of a prepared statement (as postgres.js and the embedded database run
 * them).
 */
export async function plansOf(db: Database, statement: Statement): Promise<{ custom: PlanNode; generic: PlanNode }> {
  const name = `plan_probe_${++probes}`;
  const args = statement.params.length > 0 ? `(${statement.params.map(literal).join(', ')})` : '';
  const plans: Partial<Record<'custom' | 'generic', PlanNode>> = {};
  try {
    await db.transaction(async (tx) => {
      await tx.execute(sql.raw(`prepare ${name} as ${statement.sql}`));
      for (const mode of ['custom', 'generic'] as const) {
        await tx.execute(sql.raw(`set local plan_cache_mode = force_${mode}_plan`));
        const [row] = rowsOf<{ 'QUERY PLAN': unknown }>(
          await tx.execute(sql.raw(`explain (analyze, format json) execute ${name}${args}`)),
        );
        plans[mode] = jsonColumn<Array<{ Plan: PlanNode }>>(row!['QUERY PLAN'])[0]!.Plan;
      }
      await tx.execute(sql.raw(`deallocate ${name}`));
      throw new Undone();
    });
  } catch (e) {
    if (!(e instanceof Undone)) throw e;
  }
  return { custom: plans.custom!, generic: plans.generic! };
}

/** Every node of a plan, the plan first. */
export const nodesOf = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];

/** The tables a plan reads whole: its sequential scans, executed or not. */
export const scannedTables = (plan: PlanNode): string[] =>
  nodesOf(plan)
    .filter((n) => n['Node Type'] === 'Seq Scan')
    .map((n) => n['Relation Name']!);
