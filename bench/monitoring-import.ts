/**
 * Monitoring import speed and the summary's latency right after it (BENCHMARKS.md, "Monitoring import").
 *
 *   node --import tsx bench/monitoring-import.ts [--no-analyze] <pglite|postgres://...> <notifications> [...]
 *
 * Each count runs on a fresh database (a fresh PGlite data dir, or the Postgres database emptied of
 * monitoring rows): a generated file is imported with the CLI's import, then the summary query of
 * GET monitoring/summary is timed at once, before autovacuum can refresh the statistics. With
 * --no-analyze the import leaves the statistics as they were; the summary's earlier form, a plain
 * join of cycles and states, is timed too.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { parseConfig } from '../functions/node/config.ts';
import { importNotifications } from '../functions/node/monitoring-import.ts';
import { openRuntime } from '../functions/node/runtime.ts';

const PRODUCTS = 20;
const TIMES = ['00', '12'];
const STEPS = 50;

/**
 * Cycles of INIT, EXEC and DONE for every product, time and step (one product time per cycle),
 * with a repeated DONE (ignored) and an EXEC of an unknown key (refused) every 50 keys.
 */
export function* notificationLines(count: number): Generator<string> {
  let written = 0;
  for (let cycle = 0; ; cycle++) {
    const productTime = new Date(Date.UTC(2026, 0, 1) + cycle * 12 * 3_600_000);
    const iso = (hours: number) => new Date(productTime.getTime() + hours * 3_600_000).toISOString();
    for (const code of ['INIT', 'EXEC', 'DONE']) {
      let k = 0;
      for (let p = 1; p <= PRODUCTS; p++)
        for (const time of TIMES)
          for (let step = 0; step < STEPS; step++, k++) {
            const key = { product: `P${p}`, time, step, type: 'fc', productTime: productTime.toISOString() };
            const at = iso(code === 'INIT' ? 1 : code === 'EXEC' ? 3 : 5);
            const extra = code === 'INIT' ? { scheduledTime: iso(6) } : {};
            const out = [JSON.stringify({ ...key, code, ...extra, at })];
            if (k % 50 === 0 && code === 'DONE') out.push(out[0]!);
            if (k % 50 === 0 && code === 'EXEC') out.push(JSON.stringify({ ...key, type: 'an', code, at }));
            for (const line of out) {
              if (written++ === count) return;
              yield line;
            }
          }
    }
  }
}

async function run(target: string, count: number, analyze: boolean) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'monitoring-import-'));
  const file = path.join(dir, 'notifications.ndjson');
  fs.writeFileSync(file, `${[...notificationLines(count)].join('\n')}\n`);
  const env: NodeJS.ProcessEnv =
    target === 'pglite'
      ? { ECPDS_DATA_DIR: path.join(dir, 'data') }
      : { DATABASE_URL: target, ECPDS_SECRET_KEY: randomBytes(32).toString('base64') };
  const runtime = await openRuntime(parseConfig({ ...env, ECPDS_EVENT_LOG: path.join(dir, 'events.log') }), quiet, {
    hold: false,
  });
  try {
    if (target !== 'pglite') {
      await runtime.handle.db.execute(sql`truncate step_notifications, step_status, step_cycles`);
    }
    const started = performance.now();
    const counts = await importNotifications(runtime.ports, file, () => undefined, { analyze });
    const seconds = (performance.now() - started) / 1000;
    const median = async (query: () => Promise<unknown>) => {
      const times: number[] = [];
      for (let i = 0; i < 21; i++) {
        const t0 = performance.now();
        await query();
        times.push(performance.now() - t0);
      }
      return times.sort((a, b) => a - b)[10]!.toFixed(1);
    };
    const rows = (await runtime.ports.repos.monitoring.summary({})).length;
    const summary = await median(() => runtime.ports.repos.monitoring.summary({}));
    const join = await median(() =>
      runtime.handle.db.execute(sql`select s.* from step_cycles c join step_status s
        on s.product = c.product and s.time = c.time and s.product_time = c.product_time
        order by s.product, s.time, s.step, s.type, s.buffer`),
    );
    const lateral = await median(() =>
      runtime.handle.db.execute(sql`select s.* from step_cycles c join lateral (select * from step_status t
        where t.product = c.product and t.time = c.time and t.product_time = c.product_time offset 0) s on true
        order by s.product, s.time, s.step, s.type, s.buffer`),
    );
    const rate = Math.round(count / seconds);
    console.log(
      `${target === 'pglite' ? 'PGlite' : 'Postgres'}\t${count}\t${seconds.toFixed(1)} s\t${rate}/s\t` +
        `${analyze ? 'analyzed' : 'not analyzed'}\tsummary p50 ${summary} ms (${rows} rows), ` +
        `SQL alone: lateral ${lateral} ms, plain join ${join} ms\t` +
        JSON.stringify(counts),
    );
  } finally {
    await runtime.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const args = process.argv.slice(2);
const analyze = !args.includes('--no-analyze');
const [target, ...counts] = args.filter((a) => a !== '--no-analyze');
if (!target || counts.length === 0) {
  console.error('usage: monitoring-import.ts <pglite|postgres://...> <notifications> [...]');
  process.exit(2);
}
for (const c of counts) await run(target, Number(c), analyze);
