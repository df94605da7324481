/**
 * Retrieval into the store (`BENCH_SIZES=retrieval` of `npm run bench`), each figure next to its
 * baseline in the same run, on Postgres (BENCH_DATABASE_URL) and a local OpenSSH sshd (needs root):
 *
 * 1. one file of BENCH_RETRIEVAL_MIB (default 1024) random bytes under a source root, retrieved by
 *    core's `retrieve()` into the directory store (claim, one pass with both sums, fsync, the record),
 *    against `cp`, then `md5sum`, then `sha512sum` of the same file;
 * 2. BENCH_RETRIEVAL_FILES (default 500) files of 64 KiB put through the HTTP API (10 at a time),
 *    then retrieved by an `ecpds-edge mover` process; then as many again put while it runs;
 * 3. datafile/put's p50 at one connection, and put → DONE of 1 MiB over SFTP (embedded mover, one
 *    at a time, BENCH_RETRIEVAL_SAMPLES), with a store against ECPDS_RETRIEVAL=none, in turns;
 * 4. the file of (1) sent over SFTP from its stored copy by a mover, against `scp` of the same bytes
 *    with the cipher the mover negotiates (aes128-gcm@openssh.com) to the same sshd.
 *
 * (1) and (4) run BENCH_ROUNDS times (default 3), in turns; each figure is the median.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomFillSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import postgres from 'postgres';
import { restore } from '../core/backups/handlers.ts';
import { parseBackupBody } from '../core/backups/schema.ts';
import { put } from '../core/data-files/handlers.ts';
import { startMover } from '../core/dissemination/mover.ts';
import { setDestinationStatus } from '../core/dissemination/operator.ts';
import type { Ports } from '../core/ports.ts';
import { retrieve } from '../core/retrieval/retrieve.ts';
import { type DbHandle, openPostgres } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { parallelSumming } from '../functions/node/parallel-sums.ts';
import { nodeSourceProber, nodeSourceReader } from '../functions/node/sources.ts';
import { loadTls } from '../functions/node/tls.ts';
import { directoryStore } from '../functions/store/directory-store.ts';
import { nodeTransferMethods } from '../functions/transfer-methods/index.ts';
import { startSshd } from '../test/support/servers/sshd.ts';
import {
  addBenchClient,
  auth,
  benchPorts,
  log,
  machine,
  median,
  sleep,
  spawnMover,
  startService,
  stop,
  stopped,
  waitFor,
  writeBenchFile,
} from './support.ts';

const MIB = 1024 * 1024;
const BYTES = Number(process.env.BENCH_RETRIEVAL_MIB ?? 1024) * MIB;
const FILES = Number(process.env.BENCH_RETRIEVAL_FILES ?? 500);
const SAMPLES = Number(process.env.BENCH_RETRIEVAL_SAMPLES ?? 60);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const CIPHER = 'aes128-gcm@openssh.com';
const SSH_OPTIONS = ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR'];
const PUTS_IN_FLIGHT = 10;
const WARM_UPS = 10;

type Sshd = Awaited<ReturnType<typeof startSshd>>;
interface Scene {
  work: string;
  sources: string;
  sshd: Sshd;
  admin: postgres.Sql;
  databases: string[];
  rows: string[][];
  targets: Array<[target: string, measured: string, met: boolean]>;
}

const size = (bytes: number) =>
  bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(bytes % 2 ** 30 ? 2 : 0)} GiB` : `${Math.round(bytes / MIB)} MiB`;
const mbps = (bytes: number, seconds: number) => `${Math.round(bytes / seconds / 1e6)} MB/s`;

async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  return (performance.now() - started) / 1000;
}

function tool(cmd: string, args: string[]) {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let errors = '';
    child.stderr.on('data', (d) => (errors += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd}: ${code} ${errors.slice(0, 500)}`))));
  });
}

function writeRandomFile(file: string, bytes: number) {
  const fd = fs.openSync(file, 'w');
  const block = randomBytes(Math.min(bytes, 16 * MIB));
  for (let at = 0; at < bytes; at += block.byteLength)
    fs.writeSync(fd, block, 0, Math.min(block.byteLength, bytes - at));
  fs.closeSync(fd);
}

async function freshPostgres(scene: Scene, label: string) {
  const name = `ecpds_bench_retrieval_${label}_${process.pid}`;
  await scene.admin.unsafe(`drop database if exists "${name}" with (force)`);
  await scene.admin.unsafe(`create database "${name}"`);
  scene.databases.push(name);
  const url = new URL(PG);
  url.pathname = `/${name}`;
  const handle = openPostgres(url.href, { max: 4 });
  await migrate(handle);
  await addBenchClient(handle);
  return { url: url.href, handle };
}

/** An SFTP destination on the bench sshd, stored stopped (INIT) unless `start`. */
async function sftpDestination(ports: Ports, sshd: Sshd, name: string, start: boolean) {
  const backup = parseBackupBody({
    backup: {
      methods: [
        { name: 'sftp', ectransModuleName: 'sftp', active: true, ectransModule: { name: 'sftp', active: true } },
      ],
      destinations: [
        {
          destination: { name, countryIso: 'gb', type: 1, maxConnections: 8 },
          associations: [
            {
              priority: 0,
              host: {
                nickname: name.toLowerCase(),
                type: 'Dissemination',
                active: true,
                transferMethodName: 'sftp',
                host: `127.0.0.1:${sshd.port}`,
                login: sshd.user,
                passwd: sshd.password,
                dir: sshd.scratch(`${name.toLowerCase()}-`),
                maxConnections: 8,
                data: '',
              },
            },
          ],
        },
      ],
    },
  });
  if (!backup.ok) throw new Error(backup.problem);
  await ports.repos.transaction((repos) =>
    restore({ ports, requestId: 'bench', caller: null }, repos, backup.backup, false),
  );
  if (start) await setDestinationStatus(ports, 'bench', name, 'start');
}

const register = (ports: Ports, destination: string, source: string, target: string) =>
  put({
    ctx: { ports, requestId: 'bench', caller: { username: 'bench', showSensitiveInfo: false } },
    input: { destination, source, target },
  } as Parameters<typeof put>[0]);

async function rowsOf<T>(handle: DbHandle, text: string): Promise<T[]> {
  const result = (await handle.db.execute(text)) as unknown as T[] | { rows: T[] };
  return Array.isArray(result) ? result : result.rows;
}

/**
 * The files a service reports delivered, by the UPH lines of its event log (its stdout): `of(name)`
 * settles once the line of the file of that name is written.
 */
function deliveredLines(service: ChildProcess) {
  const waiting = new Map<string, () => void>();
  const lines = readline.createInterface({ input: service.stdout! });
  lines.on('line', (line) => {
    if (!line.startsWith('UPH;')) return;
    const identity = /;Identity=([^;]*)/.exec(line)?.[1];
    if (identity) waiting.get(identity)?.();
  });
  return {
    of: (name: string) =>
      new Promise<void>((resolve) => {
        waiting.set(name, () => {
          waiting.delete(name);
          resolve();
        });
      }),
  };
}

async function statusOf(handle: DbHandle, dataFileId: number) {
  const [row] = await rowsOf<{ status: string }>(
    handle,
    `select status from data_transfers where data_file_id = ${dataFileId}`,
  );
  return row?.status;
}

/**
 * Each measurement starts on a quiet disk: what the one before left to write (the baseline's copy is
 * never flushed) or to discard (a removed copy) is not billed to the next.
 */
async function settled() {
  await tool('sync', []);
  await sleep(1000);
}

/** (1) then (4): the large file retrieved by core's retrieve(), then sent from its stored copy by a mover. */
async function largeFile(scene: Scene) {
  const { work, sources, sshd } = scene;
  const { handle } = await freshPostgres(scene, 'large');
  const store = directoryStore(path.join(work, 'store-large'));
  let wake = () => {};
  const ports = benchPorts(handle, {
    sources: nodeSourceProber({ roots: [sources], hosts: [], timeoutMs: 5000 }),
    store,
    wakeMovers: () => wake(),
  });
  const reader = nodeSourceReader({ roots: [sources], hosts: [] });
  await sftpDestination(ports, sshd, 'LARGE', false);
  const file = path.join(sources, 'large.bin');
  log(`retrieval: writing ${size(BYTES)}`);
  writeRandomFile(file, BYTES);
  const copy = path.join(work, 'cp-copy.bin');
  const ours: number[] = [];
  const tools: number[] = [];
  // The store flushes each object before recording it: the same tools with the copy flushed too (`sync FILE`).
  const synced: number[] = [];
  const ids: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const { id } = await register(ports, 'LARGE', file, `large-${round}.bin`);
    ids.push(id);
    const [claim] = await ports.repos.retrieval.claim('bench', 600_000, 1);
    if (!claim) throw new Error('nothing to retrieve');
    let outcome = '';
    const signal = new AbortController().signal;
    await settled();
    ours.push(
      await timed(async () => {
        outcome = await retrieve(
          { ports, repo: ports.repos.retrieval, store, sources: reader, summing: parallelSumming() },
          'bench',
          claim,
          signal,
        );
      }),
    );
    if (outcome !== 'stored') throw new Error(`retrieval ${outcome}`);
    await settled();
    tools.push(
      await timed(async () => {
        await tool('cp', [file, copy]);
        await tool('md5sum', [file]);
        await tool('sha512sum', [file]);
      }),
    );
    fs.rmSync(copy);
    await settled();
    synced.push(
      await timed(async () => {
        await tool('cp', [file, copy]);
        await tool('sync', [copy]);
        await tool('md5sum', [file]);
        await tool('sha512sum', [file]);
      }),
    );
    fs.rmSync(copy);
    log(
      `retrieval round ${round + 1}: retrieve() ${mbps(BYTES, ours.at(-1)!)}, cp+md5sum+sha512sum ${mbps(BYTES, tools.at(-1)!)}`,
    );
  }
  const [s, t] = [median(ours), median(tools)];
  scene.rows.push(
    [
      `core \`retrieve()\` into the directory store (one pass: MD5, SHA-512, fsync, record)`,
      size(BYTES),
      mbps(BYTES, s),
    ],
    ['baseline: `cp`, then `md5sum`, then `sha512sum` of the same file', size(BYTES), mbps(BYTES, t)],
    ['for comparison: the same with `sync` of the copy after `cp`', size(BYTES), mbps(BYTES, median(synced))],
  );
  scene.targets.push([
    `Retrieving ${size(BYTES)} into the local store ≥ 1.0 × cp + md5sum + sha512sum (baseline time / ours)`,
    `${(t / s).toFixed(2)} ×`,
    t / s >= 1,
  ]);

  // (4) Each stored copy in turn: the others stopped, the destination started, the mover sends it.
  await handle.db.execute(`update data_transfers set status = 'STOP' where destination = 'LARGE'`);
  const mover = startMover(
    { ports, methods: nodeTransferMethods({ fileRoots: [] }), sources: reader },
    { name: 'bench', concurrency: 8, leaseMs: 60_000, heartbeatMs: 15_000, pollMs: 1000 },
  );
  wake = mover.wake;
  await setDestinationStatus(ports, 'bench', 'LARGE', 'start');
  const [objectFile] = await rowsOf<{ key: string }>(
    handle,
    `select key from stored_objects where data_file_id = ${ids[0]}`,
  );
  const stored = path.join(work, 'store-large', objectFile!.key);
  const sends: number[] = [];
  const scps: number[] = [];
  const scpDir = sshd.scratch('scp-');
  try {
    for (const id of ids) {
      sends.push(
        await timed(async () => {
          await handle.db.execute(`update data_transfers set status = 'WAIT' where data_file_id = ${id}`);
          wake();
          for (;;) {
            const status = await statusOf(handle, id);
            if (status === 'DONE') return;
            if (status === 'RETR' || status === 'STOP') throw new Error(`send ${status}`);
            await sleep(5);
          }
        }),
      );
      scps.push(
        await timed(() =>
          tool('scp', [
            '-q',
            '-c',
            CIPHER,
            '-i',
            sshd.privateKeyFile,
            '-P',
            String(sshd.port),
            ...SSH_OPTIONS,
            stored,
            `${sshd.user}@127.0.0.1:${scpDir}/`,
          ]),
        ),
      );
      fs.rmSync(path.join(scpDir, path.basename(stored)), { force: true });
      log(`sftp from the store: mover ${mbps(BYTES, sends.at(-1)!)}, scp ${mbps(BYTES, scps.at(-1)!)}`);
    }
  } finally {
    await mover.stop(5000);
  }
  const [m, c] = [median(sends), median(scps)];
  scene.rows.push(
    ['mover, SFTP, from the stored copy (stored MD5), WAIT → DONE', size(BYTES), mbps(BYTES, m)],
    [`baseline: OpenSSH \`scp -c ${CIPHER}\` of the stored copy, same sshd`, size(BYTES), mbps(BYTES, c)],
  );
  scene.targets.push([
    `${size(BYTES)} over SFTP from the stored copy ≥ 0.9 of scp with the same cipher`,
    `${(c / m).toFixed(2)}`,
    c / m >= 0.9,
  ]);
  fs.rmSync(file);
  await handle.close();
}

/** Puts `count` files through the HTTP API, PUTS_IN_FLIGHT at a time; answers the seconds taken. */
async function putAll(base: string, destination: string, files: string[]) {
  let next = 0;
  const one = async () => {
    while (next < files.length) {
      const file = files[next++]!;
      const query = `destination=${destination}&source=${encodeURIComponent(file)}&target=${path.basename(file)}`;
      const answer = await fetch(`${base}/v1/datafile/put?${query}`, { headers: { authorization: auth } });
      if (!answer.ok) throw new Error(`put ${answer.status}: ${await answer.text()}`);
      await answer.arrayBuffer();
    }
  };
  return timed(() => Promise.all(Array.from({ length: PUTS_IN_FLIGHT }, one)));
}

async function storedCount(handle: DbHandle, destination: string) {
  const [row] = await rowsOf<{ n: number }>(
    handle,
    `select count(*)::int as n from data_files f join data_transfers t on t.data_file_id = f.id ` +
      `where t.destination = '${destination}' and f.object_key is not null`,
  );
  return Number(row?.n ?? 0);
}

async function untilStored(handle: DbHandle, destination: string, count: number) {
  const until = Date.now() + 600_000;
  while ((await storedCount(handle, destination)) < count) {
    if (Date.now() > until) throw new Error(`${destination}: not all ${count} retrieved`);
    await sleep(20);
  }
}

/** Files stored per second between the first and the last object of a destination, by the database's clock. */
async function storedRate(handle: DbHandle, destination: string) {
  const [row] = await rowsOf<{ n: number; seconds: number }>(
    handle,
    `select count(*)::int as n, extract(epoch from max(o.stored_at) - min(o.stored_at))::float8 as seconds ` +
      'from stored_objects o join data_transfers t on t.data_file_id = o.data_file_id ' +
      `where t.destination = '${destination}'`,
  );
  return (Number(row!.n) - 1) / Number(row!.seconds);
}

/** (2) Intake against retrieval for 64 KiB files. */
async function keepsUp(scene: Scene, port: number) {
  const { work, sources, sshd } = scene;
  const { url, handle } = await freshPostgres(scene, 'intake');
  const ports = benchPorts(handle);
  await sftpDestination(ports, sshd, 'INTAKE', false);
  await sftpDestination(ports, sshd, 'BOTH', false);
  const files = (label: string) =>
    Array.from({ length: FILES }, (_, i) => {
      const file = path.join(sources, `${label}-${i}.bin`);
      fs.writeFileSync(file, randomFillSync(Buffer.alloc(64 * 1024)));
      return file;
    });
  const storeUrl = path.join(work, 'store-intake');
  const server = startService(work, port, { DATABASE_URL: url, ECPDS_STORE_URL: storeUrl });
  const base = `https://127.0.0.1:${port}`;
  let mover: ReturnType<typeof spawnMover> | null = null;
  try {
    await waitFor(`${base}/v1/version`);
    const first = files('intake');
    const putAlone = await putAll(base, 'INTAKE', first);
    mover = spawnMover(url, 'retriever', {
      concurrency: 8,
      sourceRoots: sources,
      work,
      env: { ECPDS_STORE_URL: storeUrl },
    });
    await untilStored(handle, 'INTAKE', FILES);
    const retrievedAlone = await storedRate(handle, 'INTAKE');
    const second = files('both');
    const putBoth = await putAll(base, 'BOTH', second);
    const behind = FILES - (await storedCount(handle, 'BOTH'));
    const drain = await timed(() => untilStored(handle, 'BOTH', FILES));
    const retrievedBoth = await storedRate(handle, 'BOTH');
    const what = `${FILES} files of 64 KiB`;
    scene.rows.push(
      [
        `datafile/put over HTTPS, ${PUTS_IN_FLIGHT} at a time, no retriever running`,
        what,
        `${Math.round(FILES / putAlone)} puts/s`,
      ],
      [
        'retrieval of those files by a mover process (concurrency 8), after the puts',
        what,
        `${Math.round(retrievedAlone)} files/s`,
      ],
      [
        `datafile/put over HTTPS, ${PUTS_IN_FLIGHT} at a time, the retriever running`,
        what,
        `${Math.round(FILES / putBoth)} puts/s`,
      ],
      [
        'retrieval of those files meanwhile',
        what,
        `${Math.round(retrievedBoth)} files/s; ${behind} not yet retrieved at the last put's answer, ` +
          `retrieved ${drain.toFixed(2)} s later`,
      ],
    );
    const putRate = FILES / putAlone;
    scene.targets.push([
      'Retrieval keeps up with intake, 64 KiB files: files retrieved/s ≥ datafile/put requests/s',
      `${Math.round(retrievedAlone)} files/s against ${Math.round(putRate)} puts/s`,
      retrievedAlone >= putRate,
    ]);
  } finally {
    if (mover) await stopped(mover);
    await stop(server);
    await handle.close();
  }
}

/**
 * One-connection put latency against a server, for SECONDS; answers the p50 in ms. Timed here to a tenth
 * of a millisecond: autocannon's histogram keeps whole milliseconds, too coarse for puts of 3 to 5 ms.
 */
async function putLatency(base: string, file: string, label: string) {
  const took: number[] = [];
  const until = performance.now() + SECONDS * 1000;
  for (let n = 1; performance.now() < until; n++) {
    const query = `destination=LAT&source=${encodeURIComponent(file)}&target=${label}-${n}.bin`;
    const started = performance.now();
    const answer = await fetch(`${base}/v1/datafile/put?${query}`, { headers: { authorization: auth } });
    const body = await answer.text();
    took.push(performance.now() - started);
    if (!answer.ok) throw new Error(`put latency ${label}: ${answer.status} ${body.slice(0, 200)}`);
  }
  return median(took);
}

/** Median seconds between history steps of the store side's DONE transfers: where put → DONE spends its time. */
async function phases(handle: DbHandle) {
  const at = (status: string) => `min(h.at) filter (where h.status = '${status}')`;
  const steps = await rowsOf<{ fetch: number | null; retrieve: number | null; start: number; send: number }>(
    handle,
    `select extract(epoch from ${at('FETC')} - t.created_at)::float8 as fetch, ` +
      `extract(epoch from ${at('WAIT')} - ${at('FETC')})::float8 as retrieve, ` +
      `extract(epoch from ${at('EXEC')} - coalesce(${at('WAIT')}, t.created_at))::float8 as start, ` +
      `extract(epoch from ${at('DONE')} - ${at('EXEC')})::float8 as send ` +
      'from data_transfers t join transfer_history h on h.transfer_id = t.id ' +
      "where t.destination = 'DONE' and t.status = 'DONE' and t.target like 'mib-%' group by t.id, t.created_at",
  );
  const ms = (pick: (r: (typeof steps)[number]) => number | null) =>
    (median(steps.map((r) => pick(r) ?? 0)) * 1000).toFixed(0);
  const retrieval =
    steps[0]?.fetch === null ? '' : `put → FETC ${ms((r) => r.fetch)} ms, FETC → WAIT ${ms((r) => r.retrieve)} ms, `;
  return `${retrieval}WAIT → EXEC ${ms((r) => r.start)} ms, EXEC → DONE ${ms((r) => r.send)} ms`;
}

/**
 * (3) With a store against ECPDS_RETRIEVAL=none: the put's p50 with no mover in either server (the
 * put's own work), then put → DONE of 1 MiB over SFTP with the mover (and its retriever) embedded.
 */
async function againstNone(scene: Scene, firstPort: number) {
  const { work, sources, sshd } = scene;
  const file = path.join(sources, 'mib.bin');
  fs.writeFileSync(file, randomFillSync(Buffer.alloc(MIB)));
  const settings = [
    ['store', { ECPDS_STORE_URL: path.join(work, 'store-latency') }],
    ['none', { ECPDS_RETRIEVAL: 'none' }],
  ] as const;
  const sides = [] as Array<{ label: string; url: string; handle: DbHandle; base: string }>;
  let servers: Array<ReturnType<typeof startService>> = [];
  let ends: Array<ReturnType<typeof deliveredLines>> = [];
  const serve = async (mover: '0' | '1') => {
    servers = settings.map(([, env], i) =>
      startService(work, firstPort + i, { DATABASE_URL: sides[i]!.url, ECPDS_MOVER: mover, ...env }, 'pipe'),
    );
    ends = servers.map((server) => deliveredLines(server));
    for (const side of sides) await waitFor(`${side.base}/v1/version`);
  };
  const halt = async () => {
    for (const server of servers) await stop(server);
    servers = [];
  };
  try {
    for (const [i, [label]] of settings.entries()) {
      const { url, handle } = await freshPostgres(scene, label);
      const ports = benchPorts(handle);
      await sftpDestination(ports, sshd, 'LAT', false);
      await sftpDestination(ports, sshd, 'DONE', true);
      sides.push({ label, url, handle, base: `https://127.0.0.1:${firstPort + i}` });
    }
    const p50 = new Map<string, number[]>(sides.map((s) => [s.label, []]));
    const done = new Map<string, number[]>(sides.map((s) => [s.label, []]));
    await serve('0');
    for (const side of sides) await putLatency(side.base, file, `warm-${side.label}`);
    // Stopped between runs, on both sides alike: the puts stay below the destination's pending limit
    // (8,000 transfers waiting, which counts WAIT and not SCHE).
    const stopLatencyPuts = () =>
      Promise.all(
        sides.map((side) =>
          side.handle.db.execute(`update data_transfers set status = 'STOP' where destination = 'LAT'`),
        ),
      );
    for (let round = 0; round < ROUNDS; round++)
      for (const side of sides) {
        await stopLatencyPuts();
        p50.get(side.label)!.push(await putLatency(side.base, file, `${side.label}-${round}`));
      }
    await halt();
    // The latency puts' files are not to be retrieved ahead of the ones timed next.
    for (const side of sides)
      await side.handle.db.execute(`update data_transfers set status = 'STOP' where destination = 'LAT'`);
    await serve('1');
    // The first puts after a start are not timed: each of a server's connections parses its statements
    // and plans the first runs of each for their values, on both sides alike.
    for (let i = -WARM_UPS; i < SAMPLES; i++) {
      for (const [s, side] of sides.entries()) {
        const target = i < 0 ? `warm-${-i}.bin` : `mib-${i}.bin`;
        const query = `destination=DONE&source=${encodeURIComponent(file)}&target=${target}`;
        // Done when the service writes the file's UPH line (after the DONE's commit): nothing polls meanwhile.
        const delivered = ends[s]!.of(target);
        const took = await timed(async () => {
          const answer = await fetch(`${side.base}/v1/datafile/put?${query}`, { headers: { authorization: auth } });
          if (!answer.ok) throw new Error(`put ${answer.status}`);
          const { id } = (await answer.json()) as { id: number };
          let late: NodeJS.Timeout | undefined;
          const stuck = new Promise<never>((_, reject) => {
            late = setTimeout(async () => {
              reject(
                new Error(`${side.label} ${target}: not delivered after 60 s (${await statusOf(side.handle, id)})`),
              );
            }, 60_000);
          });
          await Promise.race([delivered, stuck]).finally(() => clearTimeout(late));
        });
        if (i >= 0) done.get(side.label)!.push(took);
      }
    }
    await halt();
    const ms = (label: string) => median(done.get(label)!) * 1000;
    const put = (label: string) => median(p50.get(label)!);
    const rounds = (label: string) => {
      const each = p50.get(label)!;
      return `${Math.min(...each).toFixed(1)} to ${Math.max(...each).toFixed(1)} ms`;
    };
    const puts = `${ROUNDS} × ${SECONDS} s`;
    const samples = `${SAMPLES} puts, one at a time`;
    scene.rows.push(
      ['datafile/put p50, 1 connection, with a store (no mover running)', puts, `${put('store').toFixed(1)} ms`],
      ['datafile/put p50, 1 connection, ECPDS_RETRIEVAL=none (no mover running)', puts, `${put('none').toFixed(1)} ms`],
      ['put → DONE, 1 MiB over SFTP, embedded mover, with a store', samples, `p50 ${ms('store').toFixed(0)} ms`],
      ['the same, its steps (medians, from the history)', samples, await phases(sides[0]!.handle)],
      ['put → DONE, 1 MiB over SFTP, embedded mover, ECPDS_RETRIEVAL=none', samples, `p50 ${ms('none').toFixed(0)} ms`],
      ['the same, its steps (medians, from the history)', samples, await phases(sides[1]!.handle)],
    );
    scene.targets.push(
      [
        // The two puts run the same statements (a status apart): their medians differ by noise as often one way as the
        // other, so worse means above every round of the baseline.
        'datafile/put p50 with a store no worse than with ECPDS_RETRIEVAL=none (not above its rounds)',
        `${put('store').toFixed(1)} ms against ${put('none').toFixed(1)} ms (rounds ${rounds('none')})`,
        put('store') <= Math.max(...p50.get('none')!),
      ],
      [
        'put → DONE of 1 MiB over SFTP with a store ≤ 1.5 × ECPDS_RETRIEVAL=none',
        `${(ms('store') / ms('none')).toFixed(2)} ×`,
        ms('store') <= 1.5 * ms('none'),
      ],
    );
  } finally {
    await halt();
    for (const side of sides) await side.handle.close();
  }
}

export async function retrievalBench() {
  const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-retrieval-')));
  const sources = path.join(work, 'src');
  fs.mkdirSync(sources);
  await loadTls({ dataDir: work, tlsCertFile: null, tlsKeyFile: null } as never);
  const scene: Scene = {
    work,
    sources,
    sshd: await startSshd(),
    admin: postgres(PG.href, { max: 1, onnotice: () => undefined }),
    databases: [],
    rows: [],
    targets: [],
  };
  const only = (process.env.BENCH_RETRIEVAL_ONLY ?? 'large,intake,latency').split(',');
  try {
    if (only.includes('large')) await largeFile(scene);
    if (only.includes('intake')) {
      await settled();
      await keepsUp(scene, 19_600);
    }
    if (only.includes('latency')) {
      await settled();
      await againstNone(scene, 19_610);
    }
  } finally {
    await scene.sshd.stop();
    for (const name of scene.databases)
      await scene.admin.unsafe(`drop database if exists "${name}" with (force)`).catch(() => undefined);
    await scene.admin.end();
    fs.rmSync(work, { recursive: true, force: true });
  }
  writeBenchFile(report(scene));
}

function report(scene: Scene) {
  return [
    '## Retrieval',
    '',
    `\`BENCH_SIZES=retrieval npm run bench\` (bench/retrieval.ts). ${machine()}`,
    '',
    'Postgres and a local OpenSSH sshd on this machine; each baseline measured in the same run, in turns ' +
      `with what it is compared to (${ROUNDS} round(s) for the large file and the put latency; medians). ` +
      `Load average at the end of the run: ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(', ')} ` +
      `on ${os.cpus().length} cores.`,
    '',
    '| Scenario | Load | Result |',
    '| --- | --- | --- |',
    ...scene.rows.map((r) => `| ${r.join(' | ')} |`),
    '',
    '| Target | Measured | |',
    '| --- | --- | --- |',
    ...scene.targets.map(([t, m, met]) => `| ${t} | ${m} | ${met ? 'met' : 'not met'} |`),
  ].join('\n');
}
