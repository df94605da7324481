import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restore } from '../core/backups/handlers.ts';
import { parseBackupBody } from '../core/backups/schema.ts';
import { SecretBox } from '../core/common/crypto.ts';
import { put } from '../core/data-files/handlers.ts';
import { setDestinationStatus } from '../core/dissemination/operator.ts';
import type { Ports } from '../core/ports.ts';
import { type DbHandle, rowsOf } from '../db/client.ts';
import { dataTransfers } from '../db/schema.ts';
import { MOVERS_CHANNEL } from '../functions/node/runtime.ts';
import { nodeSourceProber } from '../functions/node/sources.ts';
import { backgroundWork, createPorts, createProcessState } from '../functions/ports.ts';
import { directoryStore } from '../functions/store/directory-store.ts';
import { freshPostgres } from './support/database.ts';
import { eventually } from './support/engine.ts';
import { killAll, runCli, startMoverProcess, tempDir } from './support/processes.ts';
import { scaled } from './support/time.ts';

/**
 * `ecpds-edge mover` as a process of its own on Postgres: woken by NOTIFY (its polling set to a
 * minute, so that only the notification can explain a prompt delivery), and draining on SIGTERM.
 */
const url = process.env.TEST_DATABASE_URL;
const key = randomBytes(32);
let databaseUrl: string;
let handle: DbHandle & { url: string };
let ports: Ports;
let dir: string;

beforeAll(async () => {
  if (!url) return;
  handle = await freshPostgres(url);
  databaseUrl = handle.url;
  dir = tempDir('ecpds-mover-process-');
  fs.mkdirSync(path.join(dir, 'src'));
  ports = createPorts({
    db: handle.db,
    state: createProcessState(),
    secrets: new SecretBox(new Uint8Array(key)),
    logger: { info() {}, warn() {}, error() {} },
    events: { write() {} },
    sources: nodeSourceProber({ roots: [path.join(dir, 'src')], hosts: [], timeoutMs: 2000 }),
    waitUntil: backgroundWork({ info() {}, warn() {}, error() {} }).waitUntil,
  });
}, scaled(60_000));
afterAll(async () => {
  if (!url) return;
  await killAll();
  await handle.close();
});

const moverEnv = () => ({
  DATABASE_URL: databaseUrl,
  ECPDS_SECRET_KEY: key.toString('base64'),
  ECPDS_SOURCE_ROOTS: path.join(dir, 'src'),
  ECPDS_FILE_HOST_ROOTS: path.join(dir, 'out'),
  ECPDS_MOVER_POLL_MS: '60000',
  ECPDS_MOVER_HEARTBEAT_SECONDS: '1',
  ECPDS_SWEEP_SECONDS: '0',
});

async function destination(name: string, host: Record<string, unknown>) {
  const backup = parseBackupBody({
    backup: {
      methods: ['file', 'test'].map((m) => ({
        name: m,
        ectransModuleName: m,
        active: true,
        ectransModule: { name: m, classe: null, archive: null, active: true },
      })),
      destinations: [
        {
          destination: { name, countryIso: 'gb', type: 1, maxConnections: -1 },
          associations: [
            {
              priority: 0,
              host: { nickname: name, type: 'Dissemination', active: true, host: 'localhost', data: '', ...host },
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
  await setDestinationStatus(ports, 'test', name, 'start');
}

async function putFile(destination: string, target = 'f.bin', on: Ports = ports) {
  const file = path.join(dir, 'src', `${destination}-${target}`);
  fs.writeFileSync(file, randomBytes(2048));
  const { id } = await put({
    ctx: { ports: on, requestId: 't', caller: { username: 'test', showSensitiveInfo: false } },
    input: { destination, source: file, target },
  } as Parameters<typeof put>[0]);
  const [t] = await handle.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, id));
  return t!.id;
}
const statusIs = (id: number, status: string) => async () => {
  const [t] = await handle.db.select().from(dataTransfers).where(eq(dataTransfers.id, id));
  return t!.status === status ? true : undefined;
};

describe.skipIf(!url)('ecpds-edge mover on Postgres', () => {
  it('delivers at once when NOTIFY wakes it, though it would poll only every minute', async () => {
    await destination('WOKEN', { hostid: 1, transferMethodName: 'file', dir: path.join(dir, 'out', 'WOKEN') });
    const mover = startMoverProcess(moverEnv(), ['--name', 'woken', '--concurrency', '4']);
    await mover.ready;
    // Its first look for work is over once it has started; what follows needs a wake-up.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const id = await putFile('WOKEN');
    await handle.signals!.notify(MOVERS_CHANNEL);
    await eventually(statusIs(id, 'DONE'), 5000, 'DONE after NOTIFY');
    expect(fs.existsSync(path.join(dir, 'out', 'WOKEN', 'f.bin'))).toBe(true);
    expect(await mover.stop()).toBe(true);
    expect(mover.logs().find((l) => l.msg === 'mover started')).toMatchObject({ mover: 'woken', concurrency: 4 });
  });

  it(
    'retrieves at once when NOTIFY wakes it, then delivers the stored copy',
    async () => {
      await destination('FETCHED', { hostid: 4, transferMethodName: 'file', dir: path.join(dir, 'out', 'FETCHED') });
      const storeDir = path.join(dir, 'store-fetched');
      const mover = startMoverProcess({ ...moverEnv(), ECPDS_STORE_URL: storeDir }, ['--name', 'fetched']);
      await mover.ready;
      await new Promise((resolve) => setTimeout(resolve, 500));
      const id = await putFile('FETCHED', 'g.bin', { ...ports, store: directoryStore(storeDir) });
      expect(await statusIs(id, 'SCHE')()).toBe(true);
      await handle.signals!.notify(MOVERS_CHANNEL);
      await eventually(statusIs(id, 'DONE'), 5000, 'DONE after NOTIFY');
      const [copy] = rowsOf<{ object_key: string | null }>(
        await handle.db.execute(sql`select f.object_key from data_files f join data_transfers t
        on t.data_file_id = f.id where t.id = ${id}`),
      );
      expect(copy!.object_key).not.toBeNull();
      expect(fs.readFileSync(path.join(dir, 'out', 'FETCHED', 'g.bin'))).toEqual(
        fs.readFileSync(path.join(dir, 'src', 'FETCHED-g.bin')),
      );
      expect(await mover.stop()).toBe(true);
    },
    scaled(15_000),
  );

  it('lets the transfer in flight finish on SIGTERM, then exits 0', async () => {
    await destination('DRAINED', { hostid: 2, transferMethodName: 'test', data: 'test.delay = "1500"' });
    const mover = startMoverProcess({ ...moverEnv(), ECPDS_MOVER_POLL_MS: '100' }, ['--name', 'drained']);
    await mover.ready;
    const id = await putFile('DRAINED');
    await eventually(statusIs(id, 'EXEC'), 5000, 'EXEC');
    mover.child.kill('SIGTERM');
    expect(await mover.exited).toBe(0);
    expect(await statusIs(id, 'DONE')()).toBe(true);
    expect(mover.logs().map((l) => l.msg)).toEqual(expect.arrayContaining(['mover stopping', 'mover stopped']));
  });

  it(
    'paused inside a transaction, loses its session within half its lease; resumed, delivers the rest',
    async () => {
      const leaseSeconds = 4;
      await destination('PAUSED', { hostid: 3, transferMethodName: 'test', data: 'test.delay = "20"' });
      const ids: number[] = [];
      for (let i = 0; i < 150; i++) ids.push(await putFile('PAUSED', `f${i}.bin`));
      // Its sessions told apart from the test's own at the server by their application name.
      const moverUrl = new URL(databaseUrl);
      moverUrl.searchParams.set('application_name', 'paused-mover');
      const mover = startMoverProcess(
        {
          ...moverEnv(),
          DATABASE_URL: moverUrl.toString(),
          ECPDS_MOVER_POLL_MS: '50',
          ECPDS_MOVER_LEASE_SECONDS: String(leaseSeconds),
        },
        ['--name', 'paused', '--concurrency', '8'],
      );
      await mover.ready;
      const inTransaction = async () =>
        rowsOf<{ pid: number }>(
          await handle.db.execute(sql`
          select pid from pg_stat_activity
          where application_name = 'paused-mover' and state = 'idle in transaction'`),
        ).map((r) => r.pid);

      // Stopped until the server shows one of its sessions waiting inside a transaction for its next statement.
      let held: number[] = [];
      for (let tries = 0; held.length === 0; tries++) {
        if (tries === 200) throw new Error('never paused inside a transaction');
        mover.child.kill('SIGSTOP');
        await new Promise((resolve) => setTimeout(resolve, 100));
        held = await inTransaction();
        if (held.length === 0) mover.child.kill('SIGCONT');
      }
      // Ended by the server while the process is still stopped, before its lease lapses: whatever it
      // locked no longer holds up another mover's take-over.
      const stoppedAt = Date.now();
      await eventually(
        async () => ((await inTransaction()).some((pid) => held.includes(pid)) ? undefined : true),
        leaseSeconds * 1000,
        'the session to be ended',
      );
      expect(Date.now() - stoppedAt).toBeLessThan(leaseSeconds * 1000);
      mover.child.kill('SIGCONT');

      for (const id of ids) await eventually(statusIs(id, 'DONE'), 30_000, `transfer ${id} DONE`);
      expect(await mover.stop()).toBe(true);
    },
    scaled(90_000),
  );

  it('refuses a concurrency that is not a whole number from 1 to 1024', () => {
    const r = runCli(['mover', '--concurrency', '0'], moverEnv());
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("--concurrency must be a whole number from 1 to 1024, got '0'");
  });
});
