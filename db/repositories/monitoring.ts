import { and, asc, desc, eq, type SQL, sql } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { isInt32 } from '../../core/common/int32.ts';
import type { StepFilter } from '../../core/monitoring/model.ts';
import type { MonitoringRepo } from '../../core/monitoring/ports.ts';
import type { Database } from '../client.ts';
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
    const lockKey = JSON.stringify([
      key.product,
      key.time,
      key.productTime.toISOString(),
      key.buffer,
      key.step,
      key.type,
    ]);
    await db.execute(sql`select pg_advisory_xact_lock(hashtext(${lockKey}::text))`);
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
  async summary(filter) {
    // Only the latest product time (time base) of each product and time: one index range per cycle.
    const rows = await db
      .select({ status: stepStatus })
      .from(stepCycles)
      .innerJoin(
        stepStatus,
        and(
          eq(stepStatus.product, stepCycles.product),
          eq(stepStatus.time, stepCycles.time),
          eq(stepStatus.productTime, stepCycles.productTime),
        ),
      )
      .where(and(...filters(stepStatus, filter)))
      .orderBy(
        asc(stepStatus.product),
        asc(stepStatus.time),
        asc(stepStatus.step),
        asc(stepStatus.type),
        asc(stepStatus.buffer),
      );
    return rows.map((r) => r.status);
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
