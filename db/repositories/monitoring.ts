import { and, desc, eq, type SQL, sql } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { isInt32 } from '../../core/common/int32.ts';
import { type StepFilter, type StepState, stepKeyOf } from '../../core/monitoring/model.ts';
import type { MonitoringRepo } from '../../core/monitoring/ports.ts';
import { type Database, rowsOf } from '../client.ts';
import { executePrepared } from '../prepared.ts';
import { stepCycles, stepNotifications, stepStatus } from '../schema.ts';

type Columns = typeof stepStatus | typeof stepNotifications;

/** Filters are exact and case-insensitive (spec §4.8), matching the lower() indexes. */
function filters(t: Columns, f: StepFilter & { status?: string }): SQL[] {
  const out: SQL[] = [];
  const ci = (column: AnyPgColumn, value: string) => sql`lower(${column}) = lower(${value})`;
  if (f.product !== undefined) out.push(ci(t.product, f.product));
  if (f.time !== undefined) out.push(ci(t.time, f.time));
  // The column is a 32-bit integer: a step outside its range matches nothing (instead of a database error).
  if (f.step !== undefined) out.push(isInt32(f.step) ? eq(t.step, f.step) : sql`false`);
  if (f.type !== undefined) out.push(ci(t.type, f.type));
  if (f.status !== undefined) out.push(sql`lower(${t.code}) = lower(${f.status})`);
  return out;
}

export const monitoringRepo = (db: Database): MonitoringRepo => ({
  async latest(key) {
    // Serializes notifications of one key even before its first row exists (row locks cannot).
    await db.execute(sql`select pg_advisory_xact_lock(hashtext(${stepKeyOf(key)}::text))`);
    const [row] = await db
      .select()
      .from(stepStatus)
      .where(
        and(
          eq(stepStatus.product, key.product),
          eq(stepStatus.time, key.time),
          eq(stepStatus.productTime, key.productTime),
          eq(stepStatus.buffer, key.buffer),
          eq(stepStatus.step, key.step),
          eq(stepStatus.type, key.type),
        ),
      )
      .for('update');
    return row ?? null;
  },
  async record(state) {
    await db.insert(stepNotifications).values({ ...state, notifiedAt: state.lastUpdate });
    const { code, scheduledTime, lastUpdate } = state;
    await db
      .insert(stepStatus)
      .values(state)
      .onConflictDoUpdate({
        target: [
          stepStatus.product,
          stepStatus.time,
          stepStatus.productTime,
          stepStatus.buffer,
          stepStatus.step,
          stepStatus.type,
        ],
        set: { code, scheduledTime, lastUpdate },
      });
    await db
      .insert(stepCycles)
      .values({ product: state.product, time: state.time, productTime: state.productTime })
      .onConflictDoUpdate({
        target: [stepCycles.product, stepCycles.time],
        set: { productTime: sql`greatest(${stepCycles.productTime}, excluded.product_time)` },
      });
  },
  async latestOf(keys) {
    const latest = new Map<string, StepState>();
    if (keys.length === 0) return latest;
    const names = keys.map(stepKeyOf);
    // The same locks as `latest`, taken in one order so that two imports cannot deadlock.
    await executePrepared(
      db,
      sql`select count(pg_advisory_xact_lock(h)) from (
        select distinct hashtext(k) h from json_array_elements_text(${JSON.stringify(names)}::json) k order by h
      ) locks`,
      'monitoring_lock_keys',
    );
    // The keys go as one JSON parameter: one statement text whatever their number, so it is prepared once.
    const wanted = keys.map((k, i) => ({ i, ...k }));
    const rows = rowsOf<{ i: number; code: string; scheduled: number | null; updated: number }>(
      await executePrepared(
        db,
        sql`select k.i, s.code, (extract(epoch from s.scheduled_time) * 1000)::float8 scheduled,
          (extract(epoch from s.last_update) * 1000)::float8 updated
        from json_to_recordset(${JSON.stringify(wanted)}::json)
          as k(i int, product text, time text, "productTime" timestamptz, buffer bigint, step int, type text)
        join step_status s on s.product = k.product and s.time = k.time and s.product_time = k."productTime"
          and s.buffer = k.buffer and s.step = k.step and s.type = k.type
        for update of s`,
        'monitoring_latest_of',
      ),
    );
    for (const row of rows) {
      const key = keys[row.i]!;
      latest.set(names[row.i]!, {
        product: key.product,
        time: key.time,
        productTime: key.productTime,
        buffer: key.buffer,
        step: key.step,
        type: key.type,
        code: row.code,
        scheduledTime: row.scheduled === null ? null : new Date(row.scheduled),
        lastUpdate: new Date(row.updated),
      });
    }
    return latest;
  },
  async recordAll(states) {
    if (states.length === 0) return;
    // History rows keep the order of the notifications: their ids break ties of equal times.
    await executePrepared(
      db,
      sql`insert into step_notifications
          (product, time, step, type, buffer, code, product_time, scheduled_time, notified_at)
        select product, time, step, type, buffer, code, "productTime", "scheduledTime", "lastUpdate"
        from json_to_recordset(${JSON.stringify(states.map((s, n) => ({ n, ...s })))}::json)
          as r(n int, product text, time text, step int, type text, buffer bigint, code text,
            "productTime" timestamptz, "scheduledTime" timestamptz, "lastUpdate" timestamptz)
        order by n`,
      'monitoring_record_history',
    );
    // One upsert cannot change a row twice: the last state of each key is the one that stays.
    const last = new Map<string, StepState>();
    for (const s of states) last.set(stepKeyOf(s), s);
    await executePrepared(
      db,
      sql`insert into step_status
          (product, time, product_time, buffer, step, type, code, scheduled_time, last_update)
        select product, time, "productTime", buffer, step, type, code, "scheduledTime", "lastUpdate"
        from json_to_recordset(${JSON.stringify([...last.values()])}::json)
          as r(product text, time text, "productTime" timestamptz, buffer bigint, step int, type text, code text,
            "scheduledTime" timestamptz, "lastUpdate" timestamptz)
        on conflict (product, time, product_time, buffer, step, type) do update
          set code = excluded.code, scheduled_time = excluded.scheduled_time, last_update = excluded.last_update`,
      'monitoring_record_status',
    );
    const cycles = new Map<string, { product: string; time: string; productTime: Date }>();
    for (const { product, time, productTime } of states) {
      const name = JSON.stringify([product, time]);
      const seen = cycles.get(name);
      if (!seen || seen.productTime < productTime) cycles.set(name, { product, time, productTime });
    }
    await executePrepared(
      db,
      sql`insert into step_cycles (product, time, product_time)
        select product, time, "productTime"
        from json_to_recordset(${JSON.stringify([...cycles.values()])}::json)
          as r(product text, time text, "productTime" timestamptz)
        on conflict (product, time) do update
          set product_time = greatest(step_cycles.product_time, excluded.product_time)`,
      'monitoring_record_cycles',
    );
  },
  async analyze() {
    await db.execute(sql`analyze step_status, step_cycles, step_notifications`);
  },
  async summary(filter) {
    // Only the latest product time (time base) of each product and time: one index range per cycle.
    // As a plain join the planner weighs that against a scan of every state, and chooses the scan
    // when its statistics are stale (right after a large import) or as states pile up; the lateral
    // subquery with OFFSET 0 is never flattened into a join, so each cycle is one primary key range
    // lookup whatever the statistics say, and the cost follows the cycles listed, not the history.
    // Prepared, and times read as epoch milliseconds: mapping 2,000 rows of timestamps through the
    // driver's and the ORM's parsers cost more than the query itself.
    const cycle = and(
      sql`${stepStatus.product} = c.product`,
      sql`${stepStatus.time} = c.time`,
      sql`${stepStatus.productTime} = c.product_time`,
      ...filters(stepStatus, filter),
    );
    const rows = rowsOf<SummaryRow>(
      await executePrepared(
        db,
        sql`select s.product, s.time, (extract(epoch from s.product_time) * 1000)::float8 as product_time,
          s.buffer::float8 as buffer, s.step, s.type, s.code,
          (extract(epoch from s.scheduled_time) * 1000)::float8 as scheduled,
          (extract(epoch from s.last_update) * 1000)::float8 as updated
        from ${stepCycles} c
        join lateral (select * from ${stepStatus} where ${cycle} offset 0) s on true
        order by s.product, s.time, s.step, s.type, s.buffer`,
        'monitoring_summary',
      ),
    );
    return rows.map((r) => ({
      product: r.product,
      time: r.time,
      productTime: new Date(r.product_time),
      buffer: r.buffer,
      step: r.step,
      type: r.type,
      code: r.code,
      scheduledTime: r.scheduled === null ? null : new Date(r.scheduled),
      lastUpdate: new Date(r.updated),
    }));
  },
  async history(filter) {
    const rows = await db
      .select()
      .from(stepNotifications)
      .where(and(...filters(stepNotifications, filter)))
      .orderBy(desc(stepNotifications.notifiedAt), desc(stepNotifications.id));
    return rows.map(({ id: _id, notifiedAt, ...r }) => ({ ...r, lastUpdate: notifiedAt }));
  },
});

type SummaryRow = {
  product: string;
  time: string;
  product_time: number;
  buffer: number;
  step: number;
  type: string;
  code: string;
  scheduled: number | null;
  updated: number;
};
