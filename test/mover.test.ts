import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpired } from '../core/data-files/handlers.ts';
import { LeaseLapsed } from '../core/dissemination/abort-reasons.ts';
import { claimTransfers, finishAttempt } from '../core/dissemination/claims.ts';
import { changeTransfer } from '../core/dissemination/manual.ts';
import type { TransferMethod } from '../core/dissemination/methods.ts';
import { type Mover, type MoverOptions, startMover } from '../core/dissemination/mover.ts';
import { setDestinationStatus } from '../core/dissemination/operator.ts';
import { createEngineStats } from '../core/dissemination/stats.ts';
import { dataFiles, dataTransfers, destinations, transferHistory } from '../db/schema.ts';
import { renderEngine } from '../functions/http/metrics.ts';
import { nodeSourceReader } from '../functions/node/sources.ts';
import { fileMethod } from '../functions/transfer-methods/file.ts';
import { testMethod } from '../functions/transfer-methods/test.ts';
import { eventually, restoreDestination } from './support/engine.ts';
import { createHarness, type Harness } from './support/harness.ts';

/** The mover end to end through the API, on the suite's database, with the file and test methods. */
let h: Harness;
let admin: string;
let sources: string;
let delivered: string;
const movers: Mover[] = [];

/** The test method, counting the sends in progress at once and remembering how each ended. */
function watched(inner: TransferMethod = testMethod()) {
  let now = 0;
  let most = 0;
  const nowOf = new Map<string, number>();
  const mostOf = new Map<string, number>();
  const aborted: string[] = [];
  const method: TransferMethod = {
    async send(host, file, source, signal) {
      now++;
      most = Math.max(most, now);
      nowOf.set(file.target, (nowOf.get(file.target) ?? 0) + 1);
      mostOf.set(file.target, Math.max(mostOf.get(file.target) ?? 0, nowOf.get(file.target)!));
      signal.addEventListener('abort', () => aborted.push(file.target), { once: true });
      try {
        return await inner.send(host, file, source, signal);
      } finally {
        now--;
        nowOf.set(file.target, nowOf.get(file.target)! - 1);
      }
    },
    close: () => inner.close(),
  };
  /** The most sends at once, of every file or of one target. */
  return { method, most: (target?: string) => (target === undefined ? most : (mostOf.get(target) ?? 0)), aborted };
}

function mover(test: TransferMethod = testMethod(), over: Partial<MoverOptions> = {}) {
  const started = startMover(
    {
      ports: h.ports,
      methods: { file: fileMethod([delivered]), test },
      sources: nodeSourceReader({ roots: [sources], hosts: [] }),
    },
    { name: `m${movers.length + 1}`, concurrency: 8, leaseMs: 1500, heartbeatMs: 150, pollMs: 40, ...over },
  );
  movers.push(started);
  return started;
}

beforeAll(async () => {
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-mover-src-')));
  delivered = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-mover-dst-')));
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('operator', ['.*']);
});
afterEach(async () => {
  await Promise.all(movers.splice(0).map((m) => m.stop(2000)));
});
afterAll(async () => {
  await h.close();
  fs.rmSync(sources, { recursive: true, force: true });
  fs.rmSync(delivered, { recursive: true, force: true });
});

let files = 0;
function sourceFile(bytes: number) {
  const file = path.join(sources, `src-${++files}.bin`);
  const content = randomBytes(bytes);
  fs.writeFileSync(file, content);
  return { file, md5: createHash('md5').update(content).digest('hex') };
}

async function put(destination: string, query: Record<string, string> = {}, bytes = 4096) {
  const source = sourceFile(bytes);
  const q = new URLSearchParams({ destination, source: source.file, target: `out/${files}.bin`, ...query });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return { ...source, dataFileId: r.json.id as number, transferId: t!.id, target: t!.target };
}

const transfer = async (id: number) => (await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id)))[0]!;
const statusIs = (id: number, status: string) => async () =>
  (await transfer(id)).status === status ? true : undefined;
const historyOf = async (id: number) =>
  h.db
    .select({ status: transferHistory.status, hostId: transferHistory.hostId, comment: transferHistory.comment })
    .from(transferHistory)
    .where(eq(transferHistory.transferId, id))
    .orderBy(asc(transferHistory.id));
const shownStatus = async (name: string) =>
  (await h.call('GET', `/v1/destination/${name}`, { auth: admin })).json.destination.statusCode as string;

describe('a mover', () => {
  it('delivers a put end to end: same bytes and MD5, history WAIT EXEC DONE, a UPH line, no .tmp', async () => {
    const dir = path.join(delivered, 'E2E');
    await restoreDestination(h, admin, 'E2E', [{ method: 'file', dir, networkName: 'LAN', networkCode: 'L' }]);
    mover();
    const sent = await put('E2E', {}, 300_000);
    await eventually(statusIs(sent.transferId, 'DONE'), 15_000, 'DONE');

    const arrived = fs.readFileSync(path.join(dir, sent.target));
    expect(createHash('md5').update(arrived).digest('hex')).toBe(sent.md5);
    expect(fs.readdirSync(path.join(dir, 'out')).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    const [file] = await h.db.select().from(dataFiles).where(eq(dataFiles.id, sent.dataFileId));
    expect(file!.checksum).toBe(sent.md5);
    expect((await historyOf(sent.transferId)).map((r) => r.status)).toEqual(['WAIT', 'EXEC', 'DONE']);
    expect((await transfer(sent.transferId)).sent).toBe(300_000);
    const uph = h.events.find((e) => e.startsWith('UPH;') && e.includes(`DataTransferId=${sent.transferId};`));
    expect(uph).toContain('DestinationName=E2E;');
    expect(uph).toContain('BytesSent=300000;');
    expect(uph).toContain('TransferProtocol=file;');
    expect(uph).toContain('NetworkCode=LAN;');
    expect(await shownStatus('E2E')).toBe('WAIT');
  });

  it('sends nothing for a destination that was not started (INIT)', async () => {
    await restoreDestination(h, admin, 'NOT_STARTED', [{ method: 'test' }], { start: false });
    mover();
    const sent = await put('NOT_STARTED');
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await transfer(sent.transferId)).status).toBe('WAIT');
    expect(await shownStatus('NOT_STARTED')).toBe('INIT');
  });

  it('delivers on the backup host when the primary is down, with history STOP and RETR and an ERR line', async () => {
    const dir = path.join(delivered, 'FAILOVER');
    await restoreDestination(
      h,
      admin,
      'FAILOVER',
      [
        {
          method: 'test',
          data: 'test.fail = "yes"\ntest.error = "Connection refused"',
          retryCount: 1,
          retryFrequency: 50,
        },
        { method: 'file', dir },
        // No start limit: the transfer's third start is the one on the backup host.
      ],
      { destination: { maxStart: 0 } },
    );
    mover();
    const sent = await put('FAILOVER');
    await eventually(statusIs(sent.transferId, 'DONE'), 15_000, 'DONE on the backup');
    const history = await historyOf(sent.transferId);
    const [primary, backup] = [history[1]!.hostId, history.at(-1)!.hostId];
    expect(primary).not.toBe(backup);
    expect(history.map((r) => r.status)).toEqual([
      'WAIT',
      'EXEC',
      'STOP',
      'RETR',
      'EXEC',
      'STOP',
      'RETR',
      'EXEC',
      'DONE',
    ]);
    expect(history[2]!.comment).toBe('Connection refused');
    expect(fs.existsSync(path.join(dir, sent.target))).toBe(true);
    const err = h.events.filter((e) => e.startsWith('ERR;') && e.includes(`DataTransferId=${sent.transferId};`));
    expect(err).toHaveLength(2);
    expect(err[0]).toContain('DestinationType=');
    expect(err[0]).toContain('NetworkCode=Internet;');
    expect(err[0]).toContain('TransferProtocol=test;');
    expect(err[0]).toMatch(/;Message=Connection refused$/);
  });

  it('puts the destination on HOLD once every host failed its rounds', async () => {
    const down = { method: 'test' as const, data: 'test.fail = "yes"', retryCount: 0, retryFrequency: 10 };
    await restoreDestination(h, admin, 'ALL_DOWN', [down, down], { destination: { retryCount: 0 } });
    mover();
    const sent = await put('ALL_DOWN');
    await eventually(async () => ((await shownStatus('ALL_DOWN')) === 'HOLD' ? true : undefined), 15_000, 'HOLD');
    const [stored] = await h.db.select().from(destinations).where(eq(destinations.name, 'ALL_DOWN'));
    expect(stored!.statusCode).toBe('HOLD');
    expect((await transfer(sent.transferId)).status).toBe('RETR');
  });

  it('sleeps for the destination retry frequency after a failed round, shown IDLE', async () => {
    const down = { method: 'test' as const, data: 'test.fail = "yes"', retryCount: 0, retryFrequency: 10 };
    await restoreDestination(h, admin, 'SLEEPY', [down], { destination: { retryCount: 5, retryFrequency: 60_000 } });
    mover();
    const sent = await put('SLEEPY');
    await eventually(async () => ((await shownStatus('SLEEPY')) === 'IDLE' ? true : undefined), 15_000, 'IDLE');
    expect((await transfer(sent.transferId)).queueAt.getTime()).toBeGreaterThan(Date.now() + 50_000);
  });

  it('shows what it does: RETR waiting out a retry, DONE resending the failed file, then WAIT', async () => {
    const slow = { method: 'test' as const, data: 'test.delay = "1000"', retryCount: 5, retryFrequency: 1500 };
    await restoreDestination(h, admin, 'SHOWN', [slow]);
    const inner = testMethod();
    let sends = 0;
    mover({
      async send(host, file, source, signal) {
        if (++sends > 1) return inner.send(host, file, source, signal);
        for await (const _ of source);
        throw new Error('The first send fails');
      },
      close: () => inner.close(),
    });
    const sent = await put('SHOWN');
    const shows = (status: string) => async () => ((await shownStatus('SHOWN')) === status ? true : undefined);
    await eventually(shows('RETR'), 10_000, 'RETR while the host is waited for');
    await eventually(shows('DONE'), 10_000, 'DONE (Resending) while the failed file is sent again');
    await eventually(statusIs(sent.transferId, 'DONE'), 10_000, 'delivered');
    await eventually(shows('WAIT'), 5_000, 'WAIT once nothing is left');
  });

  it('never runs more than maxConnections=1 at once, across two movers, and sends all 50 files', async () => {
    await restoreDestination(h, admin, 'ONE_AT_A_TIME', [{ method: 'test', data: 'test.delay = "5"' }], {
      destination: { maxConnections: 1 },
    });
    const watch = watched();
    const sent = [];
    for (let i = 0; i < 50; i++) sent.push(await put('ONE_AT_A_TIME', {}, 64));
    mover(watch.method);
    mover(watch.method);
    for (const s of sent) await eventually(statusIs(s.transferId, 'DONE'), 30_000, `DONE ${s.transferId}`);
    expect(watch.most()).toBe(1);
  });

  it('fails a transfer whose expiry passes while it waits to retry', async () => {
    await restoreDestination(h, admin, 'EXPIRING', [
      { method: 'test', data: 'test.fail = "yes"', retryCount: 5, retryFrequency: 60_000 },
    ]);
    mover();
    const sent = await put('EXPIRING', { lifetime: '1s' });
    await eventually(statusIs(sent.transferId, 'RETR'), 10_000, 'RETR');
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await sweepExpired(h.ports);
    const ended = await transfer(sent.transferId);
    expect(ended.status).toBe('FAIL');
    expect(ended.message).toBe('File not transferred before expiration');
  });

  it('holds a standby file until it is requeued, then delivers it', async () => {
    await restoreDestination(h, admin, 'STANDBY', [{ method: 'test' }]);
    mover();
    const sent = await put('STANDBY', { standby: 'true' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await transfer(sent.transferId)).status).toBe('HOLD');
    await changeTransfer(h.ports, 'test', sent.transferId, 'requeue');
    await eventually(statusIs(sent.transferId, 'DONE'), 10_000, 'DONE after requeue');
  });

  it('re-sends a delivered file when it is put again with force, with the new content and MD5', async () => {
    const dir = path.join(delivered, 'FORCED');
    await restoreDestination(h, admin, 'FORCED', [{ method: 'file', dir }]);
    mover();
    const first = await put('FORCED', { target: 'same.bin' }, 1000);
    await eventually(statusIs(first.transferId, 'DONE'), 10_000, 'first DONE');
    const content = randomBytes(1500);
    fs.writeFileSync(first.file, content);
    const q = new URLSearchParams({ destination: 'FORCED', source: first.file, target: 'same.bin', force: 'true' });
    const again = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
    expect(again.status, again.text).toBe(200);
    expect(again.json.id).toBe(first.dataFileId);
    await eventually(
      async () =>
        (await historyOf(first.transferId)).filter((r) => r.status === 'DONE').length === 2 ? true : undefined,
      10_000,
      'second DONE',
    );
    const md5 = createHash('md5').update(content).digest('hex');
    expect(
      createHash('md5')
        .update(fs.readFileSync(path.join(dir, 'same.bin')))
        .digest('hex'),
    ).toBe(md5);
    const [file] = await h.db.select().from(dataFiles).where(eq(dataFiles.id, first.dataFileId));
    expect(file!.checksum).toBe(md5);
  });

  it('closes the stream of a send whose data file is deleted, within one heartbeat', async () => {
    await restoreDestination(h, admin, 'DELETED', [{ method: 'test', data: 'test.delay = "30s"' }]);
    const watch = watched();
    mover(watch.method);
    const sent = await put('DELETED');
    await eventually(statusIs(sent.transferId, 'EXEC'), 10_000, 'EXEC');
    const r = await h.call('DELETE', `/v1/datafile/del?id=${sent.dataFileId}`, { auth: admin });
    expect(r.status, r.text).toBe(200);
    await eventually(async () => (watch.aborted.includes(sent.target) ? true : undefined), 5000, 'abort');
    expect((await transfer(sent.transferId)).status).toBe('STOP');
    expect((await historyOf(sent.transferId)).map((x) => x.status)).not.toContain('DONE');
  });

  it("delivers the transfers of a mover that died, once, and fences the dead mover's late finish", async () => {
    await restoreDestination(h, admin, 'ORPHANS', [{ method: 'test' }], { start: false });
    const sent = await put('ORPHANS');
    const [ghost] = await claimTransfers(h.ports, {
      destination: 'ORPHANS',
      hostId: 'nowhere',
      mover: 'ghost',
      destinationMax: -1,
      hostMax: -1,
      leaseMs: 200,
      wanted: 1,
    });
    expect(ghost?.id).toBe(sent.transferId);
    await h.db.update(destinations).set({ statusCode: 'WAIT' }).where(eq(destinations.name, 'ORPHANS'));
    mover();
    await eventually(statusIs(sent.transferId, 'DONE'), 10_000, 'DONE by another mover');
    const late = { status: 'DONE' as const, sent: 1, md5: 'x', comment: 'late' };
    expect(await finishAttempt(h.ports, 'ghost', ghost!, late)).toBe(false);
    const statuses = (await historyOf(sent.transferId)).map((x) => x.status);
    expect(statuses.filter((s) => s === 'DONE')).toHaveLength(1);
    expect(statuses).toContain('INTR');
  });

  it('lets the transfers in flight finish when it stops', async () => {
    await restoreDestination(h, admin, 'DRAIN', [{ method: 'test', data: 'test.delay = "400"' }]);
    const m = mover();
    const sent = [await put('DRAIN'), await put('DRAIN')];
    for (const s of sent) await eventually(statusIs(s.transferId, 'EXEC'), 10_000, 'EXEC');
    await m.stop(10_000);
    for (const s of sent) expect((await transfer(s.transferId)).status).toBe('DONE');
  });

  it('fails an attempt whose source changed size since it was registered, saying so', async () => {
    await restoreDestination(h, admin, 'CHANGED', [{ method: 'test', retryFrequency: 60_000 }], { start: false });
    const sent = await put('CHANGED', {}, 100);
    fs.appendFileSync(sent.file, 'more');
    await h.db.update(destinations).set({ statusCode: 'WAIT' }).where(eq(destinations.name, 'CHANGED'));
    mover();
    await eventually(statusIs(sent.transferId, 'RETR'), 10_000, 'RETR');
    expect((await transfer(sent.transferId)).message).toBe('Source changed size: 104 bytes now, 100 registered');
  });

  it('leaves a file whose source is an R2 object, which only a Worker reads, to Workers: never claimed, never failed', async () => {
    await restoreDestination(h, admin, 'FROM_R2', [{ method: 'test', retryFrequency: 60_000 }]);
    // Registered by a Worker sharing the database (a Node instance refuses such a source): written directly.
    const now = h.ports.clock();
    const source = 'r2://ECPDS_SOURCES/fc/a.grib';
    const id = await h.ports.repos.dataFiles.register(
      { source, size: 10, registeredBy: 'edge', comment: 'Registered by edge', retrieve: false },
      {
        destination: 'FROM_R2',
        target: 'a.grib',
        uniqueName: '',
        priority: 0,
        status: 'WAIT',
        standby: false,
        scheduledAt: now,
        expiresAt: new Date(now.getTime() + 3_600_000),
        metadata: [],
      },
    );
    const [t] = await h.db
      .select()
      .from(dataTransfers)
      .where(eq(dataTransfers.dataFileId, id as number));
    // A local file behind it on the same destination is sent: the mover looked, and went past the R2 one.
    const local = await put('FROM_R2', {}, 100);
    mover();
    await eventually(statusIs(local.transferId, 'DONE'), 10_000, 'DONE');
    expect((await transfer(t!.id)).status).toBe('WAIT');
    expect((await historyOf(t!.id)).map((row) => row.status)).toEqual(['WAIT']);
  });

  it('shows live transfers per destination and status on /metrics, and what a mover counted', async () => {
    await restoreDestination(h, admin, 'METERED', [{ method: 'test' }], { start: false });
    await put('METERED');
    await put('METERED', { standby: 'true' });
    const r = await h.call('GET', '/metrics', { auth: admin });
    expect(r.status).toBe(200);
    expect(r.text).toContain('ecpds_transfers{destination="METERED",status="WAIT"} 1\n');
    expect(r.text).toContain('ecpds_transfers{destination="METERED",status="HOLD"} 1\n');
    expect(r.text).toMatch(/\necpds_transfers_running \d+\n/);

    const stats = createEngineStats();
    stats.delivered('7', 1000);
    stats.delivered('7', 24);
    stats.failed('8');
    stats.reclaimed(2);
    const text = renderEngine([], stats.snapshot());
    expect(text).toContain('ecpds_mover_bytes_sent_total{host="7"} 1024\n');
    expect(text).toContain('ecpds_mover_delivered_total{host="7"} 2\n');
    expect(text).toContain('ecpds_mover_failures_total{host="8"} 1\n');
    expect(text).toContain('ecpds_mover_lease_reclaims_total 2\n');
  });
});

describe('what a mover looks at', () => {
  it('starts the file of an idle destination within a poll, however many others are at their limit', async () => {
    const busy = { method: 'test' as const, data: 'test.delay = "30s"' };
    const saturated: number[] = [];
    for (let i = 0; i < 12; i++) {
      const name = `BUSY_${i}`;
      await restoreDestination(h, admin, name, [busy], { destination: { maxConnections: 1 } });
      saturated.push((await put(name)).transferId, (await put(name)).transferId);
    }
    mover(testMethod(), { concurrency: 20, pollMs: 200 });
    await eventually(
      async () =>
        (await h.db.select().from(dataTransfers).where(eq(dataTransfers.status, 'EXEC'))).length >= 12
          ? true
          : undefined,
      10_000,
      'twelve destinations at their limit',
    );
    // Their second files wait (older than any other due file); the idle destination's starts anyway.
    await restoreDestination(h, admin, 'IDLE', [{ method: 'test' }], { destination: { maxConnections: 1 } });
    const idle = await put('IDLE');
    const started = Date.now();
    await eventually(statusIs(idle.transferId, 'DONE'), 2_000, 'the idle destination delivered');
    expect(Date.now() - started).toBeLessThan(2_000);
    const waiting = await Promise.all(saturated.map(async (id) => (await transfer(id)).status));
    expect(waiting.filter((s) => s === 'EXEC')).toHaveLength(12);
    expect(waiting.filter((s) => s === 'WAIT')).toHaveLength(12);
    for (let i = 0; i < 12; i++) await setDestinationStatus(h.ports, 'test', `BUSY_${i}`, 'hold');
  });

  it('leaves a host whose method it lacks (R2 on Node) to a mover that has it, spending none of its tries', async () => {
    await restoreDestination(h, admin, 'ON_R2', [{ method: 'r2', data: 'r2.binding = "BUCKET"' }]);
    const sent = await put('ON_R2');
    mover();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await transfer(sent.transferId)).status).toBe('WAIT');
    expect((await historyOf(sent.transferId)).map((x) => x.status)).toEqual(['WAIT']);
    expect(await shownStatus('ON_R2')).not.toBe('HOLD');
  });

  it.each([
    // The database as a mover sees it when it becomes unreachable for its renewals only.
    { when: 'its renewals fail', name: 'UNRENEWED', renewal: () => Promise.reject(new Error('database unreachable')) },
    // A renewal on its way when the process was paused, or stuck in a database that stopped answering.
    { when: 'its renewal never answers', name: 'BEAT_HELD', renewal: () => new Promise<never>(() => undefined) },
  ])('stops a send on its own, its lease lapsing, before another mover may take it when $when', async (c) => {
    await restoreDestination(h, admin, c.name, [{ method: 'test', data: 'test.delay = "30s"' }]);
    const reasons: unknown[] = [];
    const inner = testMethod();
    const method: TransferMethod = {
      send(host, file, source, signal) {
        signal.addEventListener('abort', () => reasons.push(signal.reason), { once: true });
        return inner.send(host, file, source, signal);
      },
      close: () => inner.close(),
    };
    let renewalsLost = false;
    const dissemination = h.ports.repos.dissemination;
    const ports = {
      ...h.ports,
      repos: {
        ...h.ports.repos,
        dissemination: {
          ...dissemination,
          renewLeases: (input: Parameters<typeof dissemination.renewLeases>[0]) =>
            renewalsLost ? c.renewal() : dissemination.renewLeases(input),
        },
      },
    };
    movers.push(
      startMover(
        { ports, methods: { test: method }, sources: nodeSourceReader({ roots: [sources], hosts: [] }) },
        { name: c.name.toLowerCase(), concurrency: 2, leaseMs: 1500, heartbeatMs: 150, pollMs: 40 },
      ),
    );
    const sent = await put(c.name);
    await eventually(statusIs(sent.transferId, 'EXEC'), 10_000, 'EXEC');
    await new Promise((resolve) => setTimeout(resolve, 300));
    renewalsLost = true;
    const { leaseUntil } = await transfer(sent.transferId);
    await eventually(async () => (reasons.length > 0 ? true : undefined), 5_000, 'abort');
    // Stopped while the lease it was last given still held: no other mover could have started yet.
    expect(Date.now()).toBeLessThan(leaseUntil!.getTime());
    expect(reasons[0]).toBeInstanceOf(LeaseLapsed);
  });

  it('sends a transfer held and requeued during its send again as soon as that attempt has stopped', async () => {
    await restoreDestination(h, admin, 'REQUEUED', [{ method: 'test', data: 'test.delay = "2s"' }]);
    const watch = watched();
    // A lease far longer than the test: the transfer can only come back through its attempt's own end.
    mover(watch.method, { leaseMs: 120_000, heartbeatMs: 150 });
    const sent = await put('REQUEUED');
    await eventually(statusIs(sent.transferId, 'EXEC'), 10_000, 'EXEC');
    await changeTransfer(h.ports, 'test', sent.transferId, 'hold');
    await changeTransfer(h.ports, 'test', sent.transferId, 'requeue');
    await eventually(statusIs(sent.transferId, 'DONE'), 10_000, 'DONE by the next attempt');
    expect((await transfer(sent.transferId)).attempt).toBe(2);
    // Never claimed again while the first attempt was still sending.
    expect(watch.most(sent.target)).toBe(1);
    const statuses = (await historyOf(sent.transferId)).map((x) => x.status);
    expect(statuses).toEqual(['WAIT', 'EXEC', 'INTR', 'HOLD', 'RETR', 'EXEC', 'DONE']);
  });

  it('records a delivered file again when the database fails at its end, never counting it against the host', async () => {
    await restoreDestination(h, admin, 'BOOKKEEPING', [{ method: 'test', data: 'test.delay = "300"' }]);
    let failing = 0;
    const ports = {
      ...h.ports,
      repos: {
        ...h.ports.repos,
        // The database failing the next transactions: the end of the attempt (the claim came before).
        transaction: <T>(work: Parameters<typeof h.ports.repos.transaction<T>>[0]) =>
          failing-- > 0 ? Promise.reject(new Error('connection reset')) : h.ports.repos.transaction(work),
      },
    };
    movers.push(
      startMover(
        { ports, methods: { test: testMethod() }, sources: nodeSourceReader({ roots: [sources], hosts: [] }) },
        { name: 'bookkeeper', concurrency: 2, leaseMs: 20_000, heartbeatMs: 150, pollMs: 40 },
      ),
    );
    const sent = await put('BOOKKEEPING');
    await eventually(statusIs(sent.transferId, 'EXEC'), 10_000, 'EXEC');
    failing = 2;
    await eventually(statusIs(sent.transferId, 'DONE'), 15_000, 'DONE recorded at last');
    expect((await historyOf(sent.transferId)).map((x) => x.status)).toEqual(['WAIT', 'EXEC', 'DONE']);
    expect(h.logLines.some((l) => l.includes('could not record a delivered file'))).toBe(true);
  });
});
