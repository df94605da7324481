/**
 * `npm run chaos`: four `ecpds-edge mover` processes on a private Postgres cluster deliver
 * CHAOS_FILES files (default 1,000, registered over CHAOS_SECONDS, default 60, read from a slow
 * HTTP source) over SFTP to a real sshd, for nine destinations sharing three hosts (a directory
 * each, maxConnections 3; each destination maxConnections 2). Meanwhile a mover is SIGKILLed every
 * CHAOS_KILL_SECONDS (default 10) and another started in its place; one is SIGSTOPped every
 * CHAOS_PAUSE_SECONDS (default 7) for longer than its lease, then resumed; every CHAOS_OPERATOR_MS
 * (default 500) a transfer being sent is put again with force (new bytes), or held then requeued;
 * Postgres is stopped once, at 40 % of the run, for CHAOS_PG_DOWN_SECONDS (default 3). CI runs a
 * short variant (.ci/run).
 *
 * It passes when, measured at the server (its sftp-server logs every open, write, close, rename
 * and remove, per session) and in the database: every transfer is DONE, with exactly one DONE
 * since its newest put (one more for each hold of it once DONE: its requeue sends it again); the
 * last rename into each final name is by the attempt recorded DONE, no attempt renamed twice and
 * none that failed renamed at all; every final file equals its newest source; no temporary file
 * is left and nothing was written under a final name; no host ever had more files receiving bytes
 * at once than its maxConnections, nor a destination more than its own (from a file's open to its
 * last write: a paused mover keeps its file open while another attempt owns the transfer, and must
 * write no more); the claims in the database kept both limits too; no mover exited by itself.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asc } from 'drizzle-orm';
import postgres from 'postgres';
import { restore } from '../core/backups/handlers.ts';
import { parseBackupBody } from '../core/backups/schema.ts';
import { put } from '../core/data-files/handlers.ts';
import { changeTransfer } from '../core/dissemination/manual.ts';
import { setDestinationStatus } from '../core/dissemination/operator.ts';
import type { Ports } from '../core/ports.ts';
import { openPostgres } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { transferHistory } from '../db/schema.ts';
import { nodeSourceProber } from '../functions/node/sources.ts';
import { startCluster } from '../test/support/pg-cluster.ts';
import { startSlowSource } from '../test/support/servers/slow-source.ts';
import { type Sshd, startSshd } from '../test/support/servers/sshd.ts';
import { type ExpectedFile, type HistoryRow, verifyDeliveries } from './chaos-checks.ts';
import { moverFleet } from './chaos-movers.ts';
import { benchPorts, log, secretKey, sleep } from './support.ts';

const FILES = Number(process.env.CHAOS_FILES ?? 1000);
const SECONDS = Number(process.env.CHAOS_SECONDS ?? 60);
const KILL_SECONDS = Number(process.env.CHAOS_KILL_SECONDS ?? 10);
const PAUSE_SECONDS = Number(process.env.CHAOS_PAUSE_SECONDS ?? 7);
const OPERATOR_MS = Number(process.env.CHAOS_OPERATOR_MS ?? 500);
const PG_DOWN_SECONDS = Number(process.env.CHAOS_PG_DOWN_SECONDS ?? 3);
const MOVERS = 4;
const HOSTS = 3;
const DESTINATIONS = 9;
const DESTINATION_MAX = 2;
const HOST_MAX = 3;
const LEASE_SECONDS = 3;
// About 0.2 s to read a file of the middle size: kills, pauses and operators find sends in flight.
const SOURCE_RATE = 320_000;
const SMALLEST = 16 * 1024;
const LARGEST = 112 * 1024;

const names = Array.from({ length: DESTINATIONS }, (_, i) => `CHAOS_${i + 1}`);
const hostOf = (destination: number) => destination % HOSTS;
// File i goes to destination i mod DESTINATIONS, under the target f<i>.bin.
const destinationOfFile = (file: string) => Number(/\/f(\d+)\.bin(\.|$)/.exec(file)?.[1] ?? -1) % DESTINATIONS;

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-chaos-')));
const sources = path.join(tmp, 'src');
fs.mkdirSync(sources);
const failures: string[] = [];
let exitCode = 1;

const cluster = await startCluster({ maxConnections: 200 });
const sshd = await startSshd({ logWrites: true });
const source = await startSlowSource(sources, SOURCE_RATE);
const handle = openPostgres(cluster.url);
const sql = postgres(cluster.url, { max: 2, onnotice: () => undefined });
let fleet: ReturnType<typeof moverFleet> | undefined;
try {
  await migrate(handle);
  const ports = benchPorts(handle, {
    sources: nodeSourceProber({ roots: [], hosts: [source.host], timeoutMs: 5000 }),
  });
  const hostDirs = Array.from({ length: HOSTS }, (_, h) => sshd.scratch(`host${h + 1}-`));
  await restoreDestinations(ports, sshd, hostDirs);
  const [{ hosts }] = await sql<
    [{ hosts: number }]
  >`select count(distinct hostid)::int as hosts from destination_hosts`;
  if (hosts !== HOSTS) throw new Error(`${hosts} hosts restored, ${HOSTS} expected`);

  fleet = moverFleet({
    count: MOVERS,
    logDir: tmp,
    onCrash: (why) => failures.push(why),
    env: {
      ...process.env,
      DATABASE_URL: cluster.url,
      ECPDS_SECRET_KEY: secretKey,
      ECPDS_SOURCE_HOSTS: source.host,
      ECPDS_MOVER_LEASE_SECONDS: String(LEASE_SECONDS),
      ECPDS_MOVER_HEARTBEAT_SECONDS: '1',
      ECPDS_MOVER_POLL_MS: '100',
      ECPDS_MOVER_DRAIN_SECONDS: '2',
      ECPDS_EVENT_LOG: path.join(tmp, 'events.log'),
      ECPDS_SWEEP_SECONDS: '0',
    },
  });
  const movers = fleet;

  // Each target's newest source: what must be under its final name in the end.
  const expected = new Map<string, ExpectedFile>();
  const versions = new Map<number, number>();
  async function register(i: number, force: boolean) {
    const target = `f${i}.bin`;
    const version = (versions.get(i) ?? 0) + 1;
    versions.set(i, version);
    const content = randomBytes(randomInt(SMALLEST, LARGEST + 1));
    const name = `f${i}-v${version}.bin`;
    fs.writeFileSync(path.join(sources, name), content);
    const input = { destination: names[i % DESTINATIONS]!, source: source.url(name), target, ...(force && { force }) };
    const caller = { username: 'chaos', showSensitiveInfo: false };
    await persist(`put ${target}`, () =>
      put({ ctx: { ports, requestId: 'chaos', caller }, input } as Parameters<typeof put>[0]).catch((error) => {
        // Its first try was stored though its answer was lost to the restart.
        if (!force && /already exists/.test((error as Error).message)) return;
        throw error;
      }),
    );
    const file = path.join(hostDirs[hostOf(i % DESTINATIONS)]!, target);
    if ((expected.get(target)?.version ?? 0) < version) {
      expected.set(target, { file, md5: createHash('md5').update(content).digest('hex'), version });
    }
  }

  const claimed = sampleClaims();
  const killer = setInterval(() => movers.kill(), KILL_SECONDS * 1000);
  const pauser = setInterval(() => movers.pause((LEASE_SECONDS + 2) * 1000), PAUSE_SECONDS * 1000);
  const operator = operate(ports, register);
  const restart = (async () => {
    await sleep(SECONDS * 400);
    await cluster.stop();
    await sleep(PG_DOWN_SECONDS * 1000);
    await cluster.start();
  })();

  const started = Date.now();
  log(
    `chaos: ${FILES} files over ${SECONDS} s to ${DESTINATIONS} destinations on ${HOSTS} SFTP hosts, ` +
      `${MOVERS} movers; a kill every ${KILL_SECONDS} s, a pause every ${PAUSE_SECONDS} s, ` +
      `an operator every ${OPERATOR_MS} ms, Postgres down ${PG_DOWN_SECONDS} s once`,
  );
  for (let i = 0; i < FILES; i++) {
    await register(i, false);
    const due = started + ((i + 1) * SECONDS * 1000) / FILES;
    if (due > Date.now()) await sleep(due - Date.now());
  }
  const actions = await operator.stop();
  await restart;
  await untilAllDone();
  clearInterval(killer);
  clearInterval(pauser);
  const mostClaimed = await claimed.stop();
  await movers.stop();

  const transfers = await sql<Array<{ id: string; target: string }>>`select id, target from data_transfers`;
  const histories = new Map<number, HistoryRow[]>();
  for (const r of await handle.db.select().from(transferHistory).orderBy(asc(transferHistory.id))) {
    histories.set(r.transferId, [...(histories.get(r.transferId) ?? []), { status: r.status, comment: r.comment }]);
  }
  if (transfers.length !== FILES) failures.push(`${transfers.length} transfers, ${FILES} expected`);
  const spans = sshd.openWrites();
  const verdict = verifyDeliveries({
    transfers: transfers.map((t) => ({ id: Number(t.id), target: t.target })),
    histories,
    operations: sshd.fileOperations(),
    spans,
    expected,
    hostDirs,
    destinationOf: destinationOfFile,
    destinations: DESTINATIONS,
    limits: { host: HOST_MAX, destination: DESTINATION_MAX },
    log,
  });
  failures.push(...verdict.failures);
  if (mostClaimed.host > HOST_MAX) failures.push(`a host had ${mostClaimed.host} attempts claimed at once`);
  if (mostClaimed.destination > DESTINATION_MAX) {
    failures.push(`a destination had ${mostClaimed.destination} attempts claimed at once`);
  }
  const rows = [...histories.values()].flat();
  const lost = rows.filter((r) => r.comment?.startsWith('Interrupted: lost DataMover')).length;
  const interrupted = rows.filter((r) => r.status === 'INTR').length - lost;
  const { kills, pauses, failedStarts } = movers.counts;
  log(
    `chaos: ${FILES} files in ${((Date.now() - started) / 1000).toFixed(1)} s; ${kills} movers killed, ` +
      `${pauses} paused past their lease; Postgres restarted (${failedStarts} movers could not start meanwhile ` +
      `and were started again); ${actions.forced} forced puts and ${actions.heldThenRequeued} holds then ` +
      `requeues during sends; ${lost} attempts reclaimed from lost movers, ${interrupted} interrupted by an ` +
      `operator; ${verdict.deliveredAgain} files renamed into place again after an attempt whose DONE was ` +
      `never written. At the server: ${spans.length} files opened for writing, most written at once per host ` +
      `${verdict.mostPerHost} (limit ${HOST_MAX}), per destination ${verdict.mostPerDestination} (limit ` +
      `${DESTINATION_MAX}); claimed at once in the database per host ${mostClaimed.host}, per destination ` +
      `${mostClaimed.destination}`,
  );
  for (const f of failures.slice(0, 30)) log(`chaos: FAIL ${f}`);
  if (failures.length > 30) log(`chaos: ... and ${failures.length - 30} more`);
  exitCode = failures.length === 0 ? 0 : 1;
  log(exitCode === 0 ? 'chaos: passed' : 'chaos: failed');
} finally {
  fleet?.killAll();
  await sql.end().catch(() => undefined);
  await handle.close().catch(() => undefined);
  await source.stop();
  await sshd.stop();
  await cluster.destroy();
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(exitCode);

/** The nine destinations, each on one of the three SFTP hosts (one directory each), started. */
async function restoreDestinations(ports: Ports, server: Sshd, hostDirs: string[]) {
  const backup = parseBackupBody({
    backup: {
      methods: [
        {
          name: 'sftp',
          ectransModuleName: 'sftp',
          active: true,
          ectransModule: { name: 'sftp', classe: null, archive: null, active: true },
        },
      ],
      destinations: names.map((name, i) => ({
        // maxStart 0: a file whose movers are killed twice would otherwise wait the start limit's
        // 10 minutes (the reference's rule), past the end of the run.
        destination: {
          name,
          countryIso: 'gb',
          type: 1,
          maxConnections: DESTINATION_MAX,
          retryFrequency: 1000,
          maxStart: 0,
        },
        associations: [
          {
            priority: 0,
            // The same hostid in several destinations: one host, shared.
            host: {
              hostid: hostOf(i) + 1,
              nickname: `chaos-host-${hostOf(i) + 1}`,
              type: 'Dissemination',
              active: true,
              transferMethodName: 'sftp',
              host: `127.0.0.1:${server.port}`,
              login: server.user,
              passwd: server.password,
              dir: hostDirs[hostOf(i)],
              maxConnections: HOST_MAX,
              retryCount: 1000,
              retryFrequency: 500,
              data: '',
            },
          },
        ],
      })),
    },
  });
  if (!backup.ok) throw new Error(backup.problem);
  await ports.repos.transaction((repos) =>
    restore({ ports, requestId: 'chaos', caller: null }, repos, backup.backup, false),
  );
  for (const name of names) await setDestinationStatus(ports, 'chaos', name, 'start');
}

/** Tries again while Postgres is away (it is restarted once). */
async function persist<T>(what: string, work: () => Promise<T>): Promise<T> {
  for (let tries = 0; ; tries++) {
    try {
      return await work();
    } catch (error) {
      if (tries >= 300) throw new Error(`${what}: ${(error as Error).message}`);
      await sleep(200);
    }
  }
}

async function statusOf(id: number) {
  const [row] = await persist(
    'status',
    () => sql<[{ status: string }]>`select status from data_transfers where id = ${id}`,
  );
  return row.status;
}

/** The slots the claims hold (attempts with a mover), per destination and per host, at most. */
function sampleClaims() {
  const most = { destination: 0, host: 0 };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const rows = await sql<Array<{ host_id: string | null; n: number }>>`
        select host_id, count(*)::int as n from data_transfers where mover is not null
        group by grouping sets ((destination), (host_id))`.catch(() => []);
      for (const r of rows) {
        if (r.host_id === null) most.destination = Math.max(most.destination, r.n);
        else most.host = Math.max(most.host, r.n);
      }
      await sleep(20);
    }
  })();
  return {
    async stop() {
      sampling = false;
      await sampler;
      return most;
    },
  };
}

/**
 * An operator acting on transfers being sent, one every OPERATOR_MS: a forced put of new bytes, or
 * a hold then (0.1 to 0.8 s later) a requeue.
 */
function operate(ports: Ports, register: (i: number, force: boolean) => Promise<void>) {
  const acting = new Set<number>();
  const actions = { forced: 0, heldThenRequeued: 0 };
  let operating = true;
  async function holdThenRequeue(id: number) {
    // Refused when it is no longer being sent; its answer may also be lost to the restart.
    await changeTransfer(ports, 'chaos', id, 'hold').catch(() => undefined);
    if ((await statusOf(id)) !== 'HOLD') return;
    await sleep(randomInt(100, 800));
    await persist(`requeue ${id}`, () =>
      changeTransfer(ports, 'chaos', id, 'requeue').catch(async (error) => {
        if ((await statusOf(id)) === 'HOLD') throw error;
        return 'RETR' as const;
      }),
    );
    actions.heldThenRequeued++;
  }
  const loop = (async () => {
    for (let turn = 0; operating; turn++) {
      await sleep(OPERATOR_MS);
      const [sending] = await sql<Array<{ id: string; target: string }>>`
        select id, target from data_transfers where status = 'EXEC' order by random() limit 1`.catch(() => []);
      if (!sending || acting.has(Number(sending.id))) continue;
      const id = Number(sending.id);
      acting.add(id);
      const forced = turn % 2 === 0;
      const i = Number(/^f(\d+)\.bin$/.exec(sending.target)![1]);
      void (forced ? register(i, true).then(() => void actions.forced++) : holdThenRequeue(id))
        .catch((error) => failures.push(`operator on transfer ${id}: ${(error as Error).message}`))
        .finally(() => acting.delete(id));
    }
  })();
  return {
    async stop() {
      operating = false;
      await loop;
      while (acting.size > 0) await sleep(50);
      return actions;
    },
  };
}

/** Until every transfer is DONE and no attempt holds a slot, or two minutes have passed. */
async function untilAllDone() {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const [row] = await persist(
      'count',
      () => sql<[{ left: number }]>`
        select count(*)::int as left from data_transfers where status <> 'DONE' or mover is not null`,
    );
    if (row.left === 0) return;
    if (Date.now() > deadline) {
      failures.push(`${row.left} transfers not DONE two minutes after the last put`);
      return;
    }
    await sleep(200);
  }
}
