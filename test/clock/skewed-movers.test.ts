import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { asc, eq, sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { restore } from '../../core/backups/handlers.ts';
import { parseBackupBody } from '../../core/backups/schema.ts';
import { SecretBox } from '../../core/common/crypto.ts';
import { put } from '../../core/data-files/handlers.ts';
import { claimTransfers } from '../../core/dissemination/claims.ts';
import type { TransferMethod } from '../../core/dissemination/methods.ts';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import type { Ports } from '../../core/ports.ts';
import { type DbHandle, rowsOf } from '../../db/client.ts';
import { dataTransfers, transferHistory } from '../../db/schema.ts';
import { nodeSourceProber, nodeSourceReader } from '../../functions/node/sources.ts';
import { backgroundWork, createPorts, createProcessState } from '../../functions/ports.ts';
import { testMethod } from '../../functions/transfer-methods/test.ts';
import { freshPostgres } from '../support/database.ts';
import { eventually } from '../support/engine.ts';
import { basic, freePort, killAll, request, startMoverProcess, startServer, tempDir } from '../support/processes.ts';
import { scaled } from '../support/time.ts';

/**
 * Movers on one Postgres database whose machines' clocks are ten minutes off: `ecpds-edge mover`
 * processes with their wall clock (Date) shifted by test/support/skewed-clock.mjs, next to a mover
 * in this process on the right time. What has lapsed and what is due is the database's to say.
 */
const url = process.env.TEST_DATABASE_URL;
const key = randomBytes(32);
const TEN_MINUTES = 10 * 60_000;
const LEASE_SECONDS = 60;
const skewedClock = pathToFileURL(path.resolve(import.meta.dirname, '../support/skewed-clock.mjs')).href;
let databaseUrl: string;
let handle: DbHandle & { url: string };
let ports: Ports;
let dir: string;
const inProcess: Mover[] = [];

beforeAll(async () => {
  if (!url) return;
  handle = await freshPostgres(url);
  databaseUrl = handle.url;
  dir = tempDir('ecpds-clock-');
  fs.mkdirSync(path.join(dir, 'src'));
  const quiet = { info() {}, warn() {}, error() {} };
  ports = createPorts({
    db: handle.db,
    state: createProcessState(),
    secrets: new SecretBox(new Uint8Array(key)),
    logger: quiet,
    events: { write() {} },
    sources: nodeSourceProber({ roots: [path.join(dir, 'src')], hosts: [], timeoutMs: 2000 }),
    waitUntil: backgroundWork(quiet).waitUntil,
  });
}, scaled(60_000));
afterEach(async () => {
  await Promise.all(inProcess.splice(0).map((m) => m.stop(2000)));
  await killAll();
});
afterAll(async () => {
  if (!url) return;
  await handle.close();
});

/** The settings of an `ecpds-edge` process on this database, on a machine whose wall clock is `skewMs` off. */
const skewedEnv = (skewMs: number) => ({
  DATABASE_URL: databaseUrl,
  ECPDS_SECRET_KEY: key.toString('base64'),
  ECPDS_SOURCE_ROOTS: path.join(dir, 'src'),
  ECPDS_SWEEP_SECONDS: '0',
  NODE_OPTIONS: `--import=${skewedClock}`,
  TEST_CLOCK_SKEW_MS: String(skewMs),
});

function skewedMover(name: string, skewMs: number) {
  return startMoverProcess(
    {
      ...skewedEnv(skewMs),
      ECPDS_MOVER_POLL_MS: '100',
      ECPDS_MOVER_HEARTBEAT_SECONDS: '1',
      ECPDS_MOVER_LEASE_SECONDS: String(LEASE_SECONDS),
    },
    ['--name', name, '--concurrency', '4'],
  );
}

let hostIds = 0;
async function destination(name: string, options: { data?: string; start?: boolean } = {}) {
  const backup = parseBackupBody({
    backup: {
      methods: [
        {
          name: 'test',
          ectransModuleName: 'test',
          active: true,
          ectransModule: { name: 'test', classe: null, archive: null, active: true },
        },
      ],
      destinations: [
        {
          destination: { name, countryIso: 'gb', type: 1, maxConnections: -1 },
          associations: [
            {
              priority: 0,
              host: {
                hostid: ++hostIds,
                nickname: name,
                type: 'Dissemination',
                active: true,
                host: 'localhost',
                transferMethodName: 'test',
                data: options.data ?? '',
              },
            },
          ],
        },
      ],
    },
  });
  if (!backup.ok) throw new Error(backup.problem);
  await ports.repos.transaction((repos) =>
    restore({ ports, requestId: 't', caller: null }, repos, backup.backup, false),
  );
  if (options.start !== false) await setDestinationStatus(ports, 'test', name, 'start');
}

let files = 0;
/** A data file put on this process's clock (the right time here: the database runs on this machine). */
async function putFile(destination: string, options: { at?: string; priority?: number } = {}) {
  const file = path.join(dir, 'src', `${++files}.bin`);
  fs.writeFileSync(file, randomBytes(2048));
  const { id } = await put({
    ctx: { ports, requestId: 't', caller: { username: 'test', showSensitiveInfo: false } },
    input: { destination, source: file, target: `f${files}.bin`, ...options },
  } as Parameters<typeof put>[0]);
  const [t] = await handle.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, id));
  return t!.id;
}

const transfer = async (id: number) =>
  (await handle.db.select().from(dataTransfers).where(eq(dataTransfers.id, id)))[0]!;
const statusIs = (id: number, status: string) => async () =>
  (await transfer(id)).status === status ? true : undefined;
const historyOf = async (id: number) =>
  (
    await handle.db
      .select({ status: transferHistory.status, comment: transferHistory.comment })
      .from(transferHistory)
      .where(eq(transferHistory.transferId, id))
      .orderBy(asc(transferHistory.id))
  ).map((h) => h.status);
/** How far a time of the transfer is from now, by the database's clock (ms). */
async function fromNow(id: number, column: 'lease_until' | 'queue_at') {
  const rows = await handle.db.execute(
    sql`select extract(epoch from ${sql.identifier(column)} - clock_timestamp())::float8 * 1000 as ms
        from data_transfers where id = ${id}`,
  );
  return Number(rowsOf<{ ms: number }>(rows)[0]!.ms);
}

/** The test method, holding each send until released, and counting the sends of each target. */
function held() {
  const inner = testMethod();
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const sends = new Map<string, number>();
  const method: TransferMethod = {
    async send(host, file, source, signal) {
      sends.set(file.target, (sends.get(file.target) ?? 0) + 1);
      await new Promise<void>((resolve, reject) => {
        void released.then(resolve);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
      return inner.send(host, file, source, signal);
    },
    close: () => inner.close(),
  };
  return { method, release, sends: (target: string) => sends.get(target) ?? 0 };
}

describe.skipIf(!url)('movers whose machines disagree on the time, on one Postgres database', () => {
  it("a mover ten minutes ahead leaves another's live attempt alone, which that one delivers, once", async () => {
    await destination('LIVE');
    const sending = held();
    // It renews nothing while the test runs (its lease is long enough): the only mover reclaiming
    // lapsed attempts meanwhile is the one ahead.
    inProcess.push(
      startMover(
        {
          ports,
          methods: { test: sending.method },
          sources: nodeSourceReader({ roots: [path.join(dir, 'src')], hosts: [] }),
        },
        { name: 'steady', concurrency: 2, leaseMs: 120_000, heartbeatMs: 600_000, pollMs: 50 },
      ),
    );
    const live = await putFile('LIVE');
    await eventually(statusIs(live, 'EXEC'), 10_000, 'EXEC by the steady mover');
    expect((await transfer(live)).mover).toBe('steady');

    const ahead = skewedMover('ahead', TEN_MINUTES);
    await ahead.ready;
    // An attempt whose lease has lapsed by any clock, on a destination no one claims from: its
    // reclaim shows the mover ahead has judged every lease since the steady mover's claim.
    await destination('LAPSED', { start: false });
    const lapsed = await putFile('LAPSED');
    const [ghost] = await claimTransfers(ports, {
      destination: 'LAPSED',
      hostId: 'nowhere',
      mover: 'ghost',
      destinationMax: -1,
      hostMax: -1,
      leaseMs: 1,
      wanted: 1,
    });
    expect(ghost?.id).toBe(lapsed);
    await eventually(statusIs(lapsed, 'RETR'), 15_000, 'the lapsed attempt reclaimed');

    expect(await transfer(live)).toMatchObject({ status: 'EXEC', mover: 'steady', attempt: 1 });
    sending.release();
    await eventually(statusIs(live, 'DONE'), 10_000, 'DONE by the steady mover');
    expect(await historyOf(live)).toEqual(['WAIT', 'EXEC', 'DONE']);
    expect((await transfer(live)).attempt).toBe(1);
    expect(sending.sends((await transfer(live)).target)).toBe(1);
  });

  it('a mover ten minutes ahead does not send a transfer queued five minutes ahead', async () => {
    await destination('EARLY');
    const ahead = skewedMover('ahead', TEN_MINUTES);
    await ahead.ready;
    // Were it due, it would come first: whichever claim takes the other would have taken it before.
    const later = await putFile('EARLY', { at: '+5m', priority: 1 });
    const due = await putFile('EARLY', { priority: 99 });
    await eventually(statusIs(due, 'DONE'), 10_000, 'the due transfer delivered');
    expect(await transfer(later)).toMatchObject({ status: 'WAIT', mover: null, attempt: 0 });
    expect(await historyOf(later)).toEqual(['WAIT']);
  });

  it('a mover ten minutes behind still sends due work, on leases of their full length', async () => {
    await destination('BEHIND', { data: 'test.delay = "4s"' });
    const behind = skewedMover('behind', -TEN_MINUTES);
    await behind.ready;
    const due = await putFile('BEHIND');
    await eventually(statusIs(due, 'EXEC'), 10_000, 'EXEC by the mover behind');
    expect((await transfer(due)).mover).toBe('behind');
    // Claimed, then renewed on its heartbeat: each time until the database's now plus the lease.
    for (let i = 0; i < 2; i++) {
      const left = await fromNow(due, 'lease_until');
      expect(left).toBeGreaterThan((LEASE_SECONDS - 10) * 1000);
      expect(left).toBeLessThanOrEqual(LEASE_SECONDS * 1000 + 500);
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
    await eventually(statusIs(due, 'DONE'), 15_000, 'DONE by the mover behind');
    expect(await historyOf(due)).toEqual(['WAIT', 'EXEC', 'DONE']);
  });

  it("a server ten minutes ahead queues puts at the database's time", async () => {
    await destination('SERVED', { start: false });
    const props = path.join(dir, 'ecpds.properties');
    fs.writeFileSync(props, '[API]\npipeline=Pipe-pass-123:datafile.*\n');
    const server = startServer({
      ...skewedEnv(TEN_MINUTES),
      PORT: String(await freePort()),
      ECPDS_DATA_DIR: path.join(dir, 'data'),
      ECPDS_PROPERTIES: props,
      ECPDS_MOVER: '0',
    });
    const url = await server.ready;
    const putThere = async (query: Record<string, string>) => {
      const file = path.join(dir, 'src', `${++files}.bin`);
      fs.writeFileSync(file, randomBytes(64));
      const q = new URLSearchParams({ destination: 'SERVED', source: file, target: `f${files}.bin`, ...query });
      const r = await request(url, 'GET', `/v1/datafile/put?${q}`, {
        authorization: basic('pipeline', 'Pipe-pass-123'),
      });
      expect(r.status, r.text).toBe(200);
      const [t] = await handle.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
      return t!.id;
    };
    const now = await putThere({});
    const inFiveMinutes = await putThere({ at: '+5m' });
    // Registered a moment ago, by the database's clock.
    expect(await fromNow(now, 'queue_at')).toBeLessThanOrEqual(0);
    expect(await fromNow(now, 'queue_at')).toBeGreaterThan(-10_000);
    expect(await fromNow(inFiveMinutes, 'queue_at')).toBeLessThanOrEqual(5 * 60_000);
    expect(await fromNow(inFiveMinutes, 'queue_at')).toBeGreaterThan(5 * 60_000 - 10_000);
  });
});
