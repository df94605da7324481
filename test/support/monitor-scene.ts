import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { expect } from 'vitest';
import { startMover } from '../../core/dissemination/mover.ts';
import { ingest } from '../../core/monitoring/handlers.ts';
import { dataTransfers, destinations } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { fileMethod } from '../../functions/transfer-methods/file.ts';
import { testMethod } from '../../functions/transfer-methods/test.ts';
import { eventually, restoreDestination } from './engine.ts';
import type { Harness } from './harness.ts';

const HOUR = 3_600_000;
export const FAILING_ERROR = 'Connection refused by ftp.example.int:21';
export const BACKUP_ERROR = '530 Login incorrect';

/**
 * What the monitor shows, made as an operator's day makes it: destinations restored and started
 * through the API, files put and delivered by a mover over a few hours (the clock moved back for
 * the earlier ones), a destination whose hosts all refuse and that goes on HOLD, and product steps
 * notified ahead of, on and behind their schedules. `sourceRoots` of the harness must hold `sources`.
 */
export async function monitorScene(h: Harness, auth: string, sources: string) {
  const delivered = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-monitor-dst-'));
  const mover = startMover(
    {
      ports: h.ports,
      methods: { file: fileMethod([delivered]), test: testMethod() },
      sources: nodeSourceReader({ roots: [sources], hosts: [] }),
    },
    { name: 'monitor-scene', concurrency: 4, leaseMs: 5000, heartbeatMs: 100, pollMs: 30 },
  );
  let files = 0;
  const put = async (destination: string, bytes: number) => {
    const file = path.join(sources, `scene-${++files}.bin`);
    fs.writeFileSync(file, Buffer.alloc(bytes, files));
    const q = new URLSearchParams({
      destination,
      source: file,
      target: `out/${destination.toLowerCase()}-${files}.grib`,
    });
    const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth });
    expect(r.status, r.text).toBe(200);
    const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
    return t!.id;
  };
  const settled = (ids: number[], status: string) =>
    eventually(
      async () => {
        const rows = await Promise.all(
          ids.map((id) => h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id))),
        );
        return rows.every(([t]) => t!.status === status) ? true : undefined;
      },
      20_000,
      `${ids.length} transfers ${status}`,
    );
  const clock = h.ports.clock;
  try {
    await restoreDestination(h, auth, 'HEALTHY', [
      { method: 'file', dir: path.join(delivered, 'a'), networkName: 'Internet' },
      { method: 'file', dir: path.join(delivered, 'b'), networkName: 'Internet' },
    ]);
    for (const [hoursAgo, count] of [
      [7, 2],
      [5, 4],
      [3, 3],
      [1, 5],
      [0, 3],
    ] as const) {
      h.ports.clock = () => new Date(Date.now() - hoursAgo * HOUR);
      const ids = [];
      for (let i = 0; i < count; i++) ids.push(await put('HEALTHY', 40_000 * (i + 1) * (8 - hoursAgo)));
      h.ports.wakeMovers();
      await settled(ids, 'DONE');
    }
    h.ports.clock = clock;

    const down = (host: string, error: string) => ({
      method: 'test' as const,
      host,
      data: `test.fail = "yes"\ntest.error = "${error}"`,
      retryCount: 0,
      retryFrequency: 10,
    });
    await restoreDestination(
      h,
      auth,
      'FAILING',
      [down('ftp.example.int', FAILING_ERROR), down('ftp-backup.example.int', BACKUP_ERROR)],
      { destination: { retryCount: 0 } },
    );
    const failing = [await put('FAILING', 1000), await put('FAILING', 2000)];
    await eventually(
      async () => {
        const [d] = await h.db.select().from(destinations).where(eq(destinations.name, 'FAILING'));
        return d!.statusCode === 'HOLD' ? true : undefined;
      },
      20_000,
      'FAILING on HOLD',
    );
    await restoreDestination(h, auth, 'QUIET', [{ method: 'test' }], { start: false });
    await put('QUIET', 500);
    return { failing };
  } finally {
    h.ports.clock = clock;
    await mover.stop(5000);
    fs.rmSync(delivered, { recursive: true, force: true });
  }
}

/** Steps of two products: ahead of, on and behind schedule, one expected long ago and not started. */
export async function productScene(h: Harness) {
  const now = Date.now();
  const cycle = new Date(Math.floor(now / (24 * HOUR)) * 24 * HOUR);
  const minutes = (m: number) => new Date(now + m * 60_000);
  const notify = async (product: string, time: string, step: number, code: string, at: Date, scheduled?: Date) => {
    const outcome = await ingest(h.ports, {
      product,
      time,
      step,
      type: 'fc',
      buffer: 0,
      code,
      productTime: cycle,
      scheduledTime: scheduled ?? null,
      at,
    });
    expect(outcome.result, `${product} ${time} ${step} ${code}`).toBe('accepted');
  };
  // [step, minutes from now of the schedule, minutes of the arrival (null: not arrived)]
  const ens: Array<[number, number, number | null]> = [
    [0, -180, -220],
    [6, -60, -80],
    [12, -10, -15],
    [24, -30, null],
    [48, -120, null],
  ];
  for (const [step, scheduled, arrived] of ens) {
    await notify('ens', '00', step, 'INIT', minutes(scheduled - 300), minutes(scheduled));
    if (arrived !== null) await notify('ens', '00', step, 'DONE', minutes(arrived));
  }
  for (const [step, scheduled] of [
    [0, 45],
    [6, 20],
    [12, 5],
  ] as const) {
    await notify('hres', '12', step, 'INIT', minutes(-200), minutes(scheduled));
  }
  await notify('hres', '12', 0, 'EXEC', minutes(-5));
}
