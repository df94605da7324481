import { sql } from 'drizzle-orm';
import type { Database } from '../db/client.ts';

export interface Scale {
  destinations: number;
  /** Notifications = products × times × steps × cycles × 2 (INIT then DONE). */
  cycles: number;
  metadataFields: number;
}

export const PRODUCTS = 20;
export const TIMES = ['00', '12'];
export const STEPS = 50;
export const notificationsOf = (s: Scale) => PRODUCTS * TIMES.length * STEPS * s.cycles * 2;

/**
 * Bulk data for the scenarios, written with set-based SQL (same on PGlite and Postgres). With
 * `statistics: false` nothing is analyzed, as in an installation that autovacuum has not yet
 * analyzed (or, for a table it never writes, never will).
 */
export async function seed(db: Database, scale: Scale, { statistics = true } = {}) {
  await db.execute(
    sql.raw(`
    insert into destinations (name, country_iso, type, comment, user_mail)
    select 'BENCH_' || lpad(i::text, 6, '0'), (array['gb','fr','de','it','es','jp'])[1 + i % 6], i % 3,
           'benchmark destination ' || i, 'ops' || i || '@example.org'
    from generate_series(1, ${scale.destinations}) i`),
  );
  await db.execute(
    sql.raw(
      `
    insert into step_notifications (product, time, step, type, buffer, code, product_time, scheduled_time, notified_at)
    select 'P' || p, t, s, 'fc', 0, code,
           timestamptz '2026-01-01' + (c || ' hours')::interval * 12,
           timestamptz '2026-01-01' + (c || ' hours')::interval * 12 + interval '6 hours',
           timestamptz '2026-01-01' + (c || ' hours')::interval * 12 + ` +
        `(case code when 'INIT' then interval '1 hour' else interval '5 hours' end)
    from generate_series(1, ${PRODUCTS}) p, unnest(array[${TIMES.map((t) => `'${t}'`).join(',')}]) t,
         generate_series(1, ${STEPS}) s, generate_series(1, ${scale.cycles}) c, unnest(array['INIT','DONE']) code`,
    ),
  );
  await db.execute(
    sql.raw(`
    insert into step_status (product, time, product_time, buffer, step, type, code, scheduled_time, last_update)
    select product, time, product_time, buffer, step, type, code, scheduled_time, notified_at
    from step_notifications where code = 'DONE'`),
  );
  await db.execute(
    sql.raw(`
    insert into step_cycles (product, time, product_time)
    select product, time, max(product_time) from step_status group by product, time`),
  );
  await db.execute(
    sql.raw(`
    insert into metadata_fields (name, label, type, category, position)
    select 'bench_field_' || i, 'Bench field ' || i, 'text', 'Category ' || (i % 5), i
    from generate_series(1, ${scale.metadataFields}) i`),
  );
  // No maxPending: the put benchmark registers tens of thousands of files there, never sent, and
  // measures registering them, not the refusal past the reference's default of 8,000.
  await db.execute(
    sql.raw(`insert into destinations (name, country_iso, type, max_pending) values ('BENCH_META', 'gb', 1, 0)`),
  );
  if (statistics) await db.execute(sql.raw(`analyze`));
}

/** A metadata PUT body setting every benchmark field. */
export function metadataBody(fields: number) {
  const metadata: Record<string, Record<string, string>> = {};
  for (let i = 1; i <= fields; i++) (metadata[`Category ${i % 5}`] ??= {})[`bench_field_${i}`] = `value ${i}`;
  return JSON.stringify({ metadata });
}
