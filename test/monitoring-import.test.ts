import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asc } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingest } from '../core/monitoring/handlers.ts';
import { checkedLine, parseNotificationLine, plainLine } from '../core/monitoring/notification-line.ts';
import { stepCycles, stepNotifications, stepStatus } from '../db/schema.ts';
import { importNotifications } from '../functions/node/monitoring-import.ts';
import { createHarness, type Harness } from './support/harness.ts';

const NOW = new Date('2026-03-02T12:00:00Z');

/** A deterministic mix over few keys: repeated keys, times out of order, unknown keys, and a bad line. */
function generatedLines(count: number): string[] {
  let seed = 12345;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const iso = (hours: number) => new Date(Date.UTC(2026, 2, 1) + hours * 3_600_000).toISOString();
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const code = ['INIT', 'EXEC', 'DONE', 'init'][random(4)]!;
    const note = {
      product: ['ens', 'hres', 'a;b'][random(3)],
      time: ['00', '12'][random(2)],
      step: random(3),
      type: 'fc',
      buffer: [0, 60_000][random(2)],
      code,
      productTime: iso(24 * random(2)),
      scheduledTime: random(3) === 0 ? null : iso(4 + random(3)),
      at: iso(random(48)),
    };
    lines.push(i % 97 === 50 ? '{not json' : JSON.stringify(note));
  }
  return lines;
}

describe('monitoring import in chunks', () => {
  const lines = generatedLines(1_500);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'monitoring-import-'));
  const file = path.join(dir, 'notes.ndjson');
  let one: Harness;
  let chunked: Harness;
  let whole: Harness;
  beforeAll(async () => {
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    [one, chunked, whole] = await Promise.all([createHarness(), createHarness(), createHarness()]);
    for (const g of [one, chunked, whole]) g.ports.clock = () => NOW;
  });
  afterAll(async () => {
    await Promise.all([one, chunked, whole].map((g) => g?.close()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const stored = async (g: Harness) => ({
    history: await g.db.select().from(stepNotifications).orderBy(asc(stepNotifications.id)),
    status: await g.db
      .select()
      .from(stepStatus)
      .orderBy(
        asc(stepStatus.product),
        asc(stepStatus.time),
        asc(stepStatus.productTime),
        asc(stepStatus.buffer),
        asc(stepStatus.step),
        asc(stepStatus.type),
      ),
    cycles: await g.db.select().from(stepCycles).orderBy(asc(stepCycles.product), asc(stepCycles.time)),
  });

  it('stores the same states, cycles and history and writes the same PRS entries as one at a time', async () => {
    const counts = { accepted: 0, ignored: 0, refused: 0, bad: 0 };
    for (const line of lines) {
      const parsed = parseNotificationLine(line, NOW);
      if (parsed.ok) counts[(await ingest(one.ports, parsed.value)).result]++;
      else counts.bad++;
    }
    // Chunks of 7 split a key's notifications across transactions; the default chunk holds them all.
    const reports: string[] = [];
    expect(await importNotifications(chunked.ports, file, (l) => reports.push(l), { chunk: 7 })).toEqual(counts);
    expect(await importNotifications(whole.ports, file, () => undefined)).toEqual(counts);
    expect(reports).toEqual(
      lines.flatMap((l, i) => (l === '{not json' ? [`line ${i + 1}: not valid JSON; skipped\n`] : [])),
    );
    // Every kind of outcome occurs, so every rule was compared.
    expect(counts.accepted).toBeGreaterThan(100);
    expect(counts.ignored).toBeGreaterThan(100);
    expect(counts.refused).toBeGreaterThan(10);

    const reference = await stored(one);
    expect(reference.history).toHaveLength(counts.accepted);
    expect(await stored(chunked)).toEqual(reference);
    expect(await stored(whole)).toEqual(reference);
    expect(one.events).toHaveLength(counts.ignored + counts.refused);
    expect(chunked.events).toEqual(one.events);
    expect(whole.events).toEqual(one.events);
  });

  it('draws a progress bar when given a terminal, and clears it at the end', async () => {
    const drawn: string[] = [];
    await importNotifications(whole.ports, file, () => undefined, { tty: (t) => drawn.push(t), redrawMs: 0 });
    expect(drawn.some((t) => /^\r\[#*\.*\] \d+% \d+ lines, \d+\/s\x1b\[K$/.test(t))).toBe(true);
    expect(drawn.at(-1)).toBe('\r\x1b[K');
  });
});

describe('notification lines', () => {
  const base = { product: ' ens ', time: '00', step: 3, type: 'fc', code: 'done', productTime: '2026-03-02T00:00:00Z' };
  const variants: unknown[] = [
    base,
    { ...base, buffer: 60_000, scheduledTime: '2026-03-02T06:00:00+01:00', at: '2026-03-02T05:00:00Z', extra: 1 },
    { ...base, scheduledTime: null },
    { ...base, buffer: -0, step: -0 },
    { ...base, buffer: -1 },
    { ...base, buffer: 1.5 },
    { ...base, buffer: null },
    { ...base, buffer: 2 ** 53 },
    { ...base, step: 2 ** 31 },
    { ...base, step: '3' },
    { ...base, product: '   ' },
    { ...base, code: 7 },
    { ...base, productTime: 'yesterday' },
    { ...base, scheduledTime: 'soon' },
    { ...base, at: null },
    { ...base, at: 12 },
    [base],
    null,
    'text',
  ];

  it('the hand check accepts exactly the lines the schema accepts, with the same values', () => {
    for (const json of variants) {
      const checked = checkedLine(json, NOW);
      const plain = plainLine(json, NOW);
      expect(plain, JSON.stringify(json)).toEqual(checked.ok ? checked.value : null);
      const line = JSON.stringify(json);
      expect(parseNotificationLine(line, NOW)).toEqual(checkedLine(JSON.parse(line), NOW));
    }
  });
});
