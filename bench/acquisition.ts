/**
 * Acquisition (BENCHMARKS.md, "Acquisition"): `ecpds-edge serve` (the compiled build, its mover embedded)
 * acquiring, on the embedded database and on Postgres (BENCH_DATABASE_URL, default the local server, a
 * database of its own created and dropped here), each figure next to a baseline measured in the same run.
 *
 * 1. An Acquisition host (method sftp) of a destination with no Dissemination host lists a directory of
 *    BENCH_ACQ_FILES (default 10,000) files of 1 KiB on an OpenSSH sshd started here (needs root). The
 *    directory is a symbolic link, to batch A then to batch B (as many other files). Phases, the server
 *    stopped between them (the embedded database is the server's alone) and the runs read from the
 *    database then (`acquisition_runs` keeps each host's last run, `data_transfers` each registration):
 *      first run over A (all new); nothing-new runs over A (A acquired); first run over B (A acquired
 *      before); nothing-new runs over B (A and B acquired: twice as many files known, as many listed).
 *    A nothing-new phase lets the host run NOTHING_NEW_RUNS times, `acquisitionFrequency` 3 s apart, and
 *    keeps the last (a warm process); it is repeated BENCH_ACQ_ROUNDS times (default 2), the median kept.
 *    Baseline: OpenSSH's `sftp -b` listing (`ls -l`) the same directory, BENCH_ACQ_ROUNDS times.
 * 2. An Acquisition host in `http.mqttMode` subscribed to a Mosquitto broker started here, files of 10 KiB
 *    served by a local HTTP server: BENCH_ACQ_MESSAGES (default 1,000) WIS2 Notification Messages published
 *    one at a time (each waiting for the one before), then as many at once. A file's latency runs from its
 *    publication to its RET line on the server's stdout (written once the stored copy is recorded: the
 *    transfer has left SCHE/FETC, which is what the portal's tree shows). Baseline: `mosquitto_sub`
 *    receiving the same messages on a topic of its own, and `curl` downloading each file, one at a time.
 *
 *   npm run build && node --import tsx bench/acquisition.ts
 *
 * BENCH_ACQ_ONLY=sftp|wis2 and BENCH_ACQ_DATABASES=embedded|postgres run a part.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { type SQL, sql } from 'drizzle-orm';
import mqtt from 'mqtt';
import postgres from 'postgres';
import { restore } from '../core/backups/handlers.ts';
import { parseBackupBody } from '../core/backups/schema.ts';
import { setDestinationStatus } from '../core/dissemination/operator.ts';
import { type DbHandle, openPostgres, rowsOf } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { openPglite } from '../db/pglite.ts';
import { type Sshd, startSshd } from '../test/support/servers/sshd.ts';
import {
  addBenchClient,
  auth,
  benchPorts,
  freePort,
  log,
  machine,
  median,
  secretKey,
  sleep,
  start,
  stop,
  untilListening,
  waitFor,
  writeBenchFile,
} from './support.ts';

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
// The embedded side must not inherit a database from the environment.
delete process.env.DATABASE_URL;

const FILES = Number(process.env.BENCH_ACQ_FILES ?? 10_000);
const MESSAGES = Number(process.env.BENCH_ACQ_MESSAGES ?? 1_000);
const ROUNDS = Number(process.env.BENCH_ACQ_ROUNDS ?? 2);
const ONLY = (process.env.BENCH_ACQ_ONLY ?? 'sftp,wis2').split(',');
const DATABASES = (process.env.BENCH_ACQ_DATABASES ?? 'embedded,postgres').split(',');
const PG = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const FILE_BYTES = 1024;
const MESSAGE_BYTES = 10 * 1024;
const WARMUP_MESSAGES = 20;
const NOTHING_NEW_RUNS = 3;
const HOUR_MS = 3_600_000;
const NOTHING_NEW_FREQUENCY_MS = 3000;
const POLL_MS = 200;
const SFTP_DESTINATION = 'ACQ_SFTP';
const WIS2_DESTINATION = 'ACQ_WIS2';
const TOPIC = 'origin/a/wis2/xx-ecpds-bench/data/core/weather/surface-based-observations';
const SSH_OPTIONS = ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR'];

interface Side {
  label: 'embedded' | 'postgres';
  env: Record<string, string>;
  open(): Promise<DbHandle>;
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))] ?? 0;

async function rows<T>(handle: DbHandle, query: SQL): Promise<T[]> {
  return rowsOf<T>(await handle.db.execute(query));
}

// ---------------------------------------------------------------------------------------------------------
// The server, its event lines and its metrics

interface Service {
  child: ChildProcess;
  base: string;
  /** RET lines (a file stored and recorded) by destination and file name: when the bench read them. */
  retrieved: Map<string, number>;
  /** The service's own time of each RET line (its TimeStamp, ms since the epoch). */
  retrievedAt: Map<string, number>;
  errors: string[];
  /** Resolves once the RET line of `destination`/`name` is read. */
  stored(destination: string, name: string): Promise<number>;
  count(destination: string): number;
}

async function serve(side: Side, work: string): Promise<Service> {
  const port = await freePort();
  const child = start(
    ['functions/bin/ecpds-edge.mjs', 'serve'],
    {
      ...side.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      ECPDS_DEMO: '0',
      ECPDS_SECRET_KEY: secretKey,
      ECPDS_PORTAL_SFTP_PORT: '0',
      ECPDS_PORTAL_S3_PORT: '0',
      ECPDS_SWEEP_SECONDS: '0',
      // The embedded mover acquires (its acquirer) and retrieves into the store (its retriever).
      ECPDS_MOVER: '1',
      ECPDS_ACQUISITION_POLL_MS: String(POLL_MS),
      ECPDS_SOURCE_ROOTS: path.join(work, 'src'),
    },
    'pipe',
  );
  const retrieved = new Map<string, number>();
  const retrievedAt = new Map<string, number>();
  const counts = new Map<string, number>();
  const waiting = new Map<string, (at: number) => void>();
  const errors: string[] = [];
  const lines = readline.createInterface({ input: child.stdout! });
  lines.on('line', (line) => {
    if (line.startsWith('RET;')) {
      const at = performance.now();
      const destination = /;DestinationName=([^;]*)/.exec(line)?.[1] ?? '';
      const name = /;FileName=([^;]*)/.exec(line)?.[1] ?? '';
      const key = `${destination}/${name}`;
      retrieved.set(key, at);
      retrievedAt.set(key, Number(/^RET;TimeStamp=(\d+)/.exec(line)?.[1]));
      counts.set(destination, (counts.get(destination) ?? 0) + 1);
      waiting.get(key)?.(at);
      waiting.delete(key);
    } else if (line.startsWith('ERR;')) {
      errors.push(line);
      if (errors.length <= 3) log(`service: ${line.slice(0, 400)}`);
    }
  });
  const base = `https://127.0.0.1:${port}`;
  await waitFor(`${base}/v1/version`);
  return {
    child,
    base,
    retrieved,
    retrievedAt,
    errors,
    count: (destination) => counts.get(destination) ?? 0,
    stored(destination, name) {
      const key = `${destination}/${name}`;
      const at = retrieved.get(key);
      if (at !== undefined) return Promise.resolve(at);
      return new Promise((resolve) => waiting.set(key, resolve));
    },
  };
}

/** Every run of the host so far, whatever its outcome, as /metrics counts them. */
async function runsOf(service: Service, hostId: number) {
  const text = await (await fetch(`${service.base}/metrics`, { headers: { authorization: auth } })).text();
  let total = 0;
  for (const m of text.matchAll(new RegExp(`^ecpds_acquisition_runs_total\\{host="${hostId}",[^}]*\\} (\\d+)$`, 'gm')))
    total += Number(m[1]);
  return total;
}

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number, everyMs = 100) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Seeding, with core's own restore (the server stopped)

function backupOf(destination: string, method: 'sftp' | 'http', host: Record<string, unknown>) {
  const parsed = parseBackupBody({
    backup: {
      methods: [
        { name: method, ectransModuleName: method, active: true, ectransModule: { name: method, active: true } },
      ],
      destinations: [
        {
          destination: { name: destination, countryIso: 'gb', type: 0 },
          associations: [
            {
              priority: 0,
              host: {
                type: 'Acquisition',
                active: true,
                transferMethodName: method,
                networkName: 'Internet',
                networkCode: 'I',
                ...host,
              },
            },
          ],
        },
      ],
    },
  });
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.backup;
}

/** Restores one Acquisition destination and starts it; answers its host's id. */
async function addDestination(
  handle: DbHandle,
  destination: string,
  method: 'sftp' | 'http',
  host: Record<string, unknown>,
) {
  const ports = benchPorts(handle);
  const backup = backupOf(destination, method, host);
  await ports.repos.transaction((repos) => restore({ ports, requestId: 'bench', caller: null }, repos, backup, false));
  await setDestinationStatus(ports, 'bench', destination, 'start');
  const [row] = await rows<{ hostid: string | number }>(
    handle,
    sql`select hostid from hosts where nickname = ${host.nickname as string}`,
  );
  return Number(row!.hostid);
}

// ---------------------------------------------------------------------------------------------------------
// 1. Listing and selecting over SFTP

interface RunFigures {
  /** Seconds from the run's start (its claim) to its end (its record). */
  duration: number;
  /** Seconds from the run's start to its first and last registrations. */
  firstRegistered: number;
  lastRegistered: number;
  registered: number;
  /** Seconds from the run's start to the last file stored (its RET line). */
  allRetrieved: number;
  /** ERR lines the server wrote meanwhile (retrievals that failed, to be tried again). */
  errLines: number;
}

interface SftpFigures {
  label: string;
  firstA: RunFigures;
  firstB: RunFigures;
  /** Nothing-new runs over A (A acquired) and over B (A and B acquired): seconds, each round. */
  nothingA: number[];
  nothingB: number[];
  listA: Listings;
  listB: Listings;
}

/** The baseline's listings, seconds each: logging in, and over an open connection. */
interface Listings {
  login: number[];
  open: number[];
}

interface SftpScene {
  sshd: Sshd;
  /** The directory the host lists: a symbolic link to `a` or `b`. */
  link: string;
  /** The control socket of the baseline's master connection. */
  control: string;
  a: string;
  b: string;
}

function makeFiles(sshd: Sshd, prefix: string) {
  const dir = sshd.scratch(`acq-${prefix}-`);
  const bytes = randomBytes(FILE_BYTES);
  for (let i = 0; i < FILES; i++) {
    bytes.writeUInt32BE(i, 0);
    fs.writeFileSync(path.join(dir, `${prefix}-${String(i).padStart(6, '0')}.bin`), bytes);
  }
  return dir;
}

function pointTo(scene: SftpScene, dir: string) {
  const next = `${scene.link}.next`;
  fs.rmSync(next, { force: true });
  fs.symlinkSync(dir, next);
  fs.renameSync(next, scene.link);
}

/** OpenSSH's own client listing the directory (`ls -l`), logging in or over the master's connection: seconds. */
function sftpList(scene: SftpScene, expected: number, overMaster: boolean) {
  const { sshd } = scene;
  const through = overMaster ? ['-o', `ControlPath=${scene.control}`] : [];
  const started = performance.now();
  const out = execFileSync(
    'sftp',
    [
      ...['-q', '-b', '-', '-i', sshd.privateKeyFile, '-P', String(sshd.port)],
      ...SSH_OPTIONS,
      ...through,
      `${sshd.user}@127.0.0.1`,
    ],
    { input: `ls -l ${scene.link}/\n`, maxBuffer: 1 << 30, encoding: 'utf8' },
  );
  const seconds = (performance.now() - started) / 1000;
  const listed = out.split('\n').filter((l) => l.endsWith('.bin')).length;
  if (listed !== expected) throw new Error(`sftp listed ${listed} files, ${expected} expected`);
  return seconds;
}

/** Both baselines, in turns. */
function baselines(scene: SftpScene, into: Listings) {
  into.login.push(sftpList(scene, FILES, false));
  into.open.push(sftpList(scene, FILES, true));
}

/**
 * An OpenSSH master connection (`ssh -M`) the baseline's `sftp` goes through, as the service's runs go
 * through the idle session their method keeps: the listing without a login.
 */
async function sshMaster(sshd: Sshd, control: string) {
  const child = spawn(
    'ssh',
    [
      ...['-M', '-S', control, '-N', '-i', sshd.privateKeyFile, '-p', String(sshd.port)],
      ...SSH_OPTIONS,
      `${sshd.user}@127.0.0.1`,
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  await until('the ssh master connection', () => fs.existsSync(control), 10_000, 20);
  return async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    spawn('ssh', ['-S', control, '-O', 'exit', 'x'], { stdio: 'ignore' });
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
}

async function lastRun(handle: DbHandle, hostId: number) {
  const [row] = await rows<{ started: unknown; finished: unknown; outcome: string; output: string }>(
    handle,
    sql`select (extract(epoch from started_at) * 1000)::float8 as started,
      (extract(epoch from finished_at) * 1000)::float8 as finished, outcome, output
      from acquisition_runs where hostid = ${hostId}`,
  );
  if (!row) throw new Error(`host ${hostId} never ran`);
  return { started: Number(row.started), finished: Number(row.finished), outcome: row.outcome, output: row.output };
}

/** Sets when the host runs next (now) and how often after. */
async function reschedule(side: Side, hostId: number, frequencyMs: number) {
  const handle = await side.open();
  try {
    await handle.db.execute(sql`update hosts set acquisition_frequency = ${frequencyMs} where hostid = ${hostId}`);
    await handle.db.execute(sql`update acquisition_runs set next_at = now() where hostid = ${hostId}`);
  } finally {
    await handle.close();
  }
}

/** A run over a batch of new files: the server runs until each is stored, then the run is read. */
async function firstRun(side: Side, work: string, hostId: number, prefix: string, runsBefore: number) {
  const service = await serve(side, work);
  try {
    await until(
      `${FILES} files of ${prefix} stored`,
      () => {
        let n = 0;
        for (const key of service.retrieved.keys()) if (key.startsWith(`${SFTP_DESTINATION}/${prefix}-`)) n++;
        return n >= FILES;
      },
      1_800_000,
      250,
    );
    await until('the run recorded', async () => (await runsOf(service, hostId)) > runsBefore, 60_000, 250);
  } finally {
    await stop(service.child);
  }
  const retrievedAt = [...service.retrievedAt.entries()]
    .filter(([key]) => key.startsWith(`${SFTP_DESTINATION}/${prefix}-`))
    .map(([, at]) => at);
  const handle = await side.open();
  try {
    const run = await lastRun(handle, hostId);
    if (run.outcome !== 'done') throw new Error(`first run over ${prefix}: ${run.outcome}\n${run.output.slice(-2000)}`);
    const [r] = await rows<{ n: unknown; first: unknown; last: unknown; done: unknown }>(
      handle,
      sql`select count(*)::int as n, (extract(epoch from min(created_at)) * 1000)::float8 as first,
        (extract(epoch from max(created_at)) * 1000)::float8 as last,
        count(*) filter (where status = 'DONE')::int as done
        from data_transfers where destination = ${SFTP_DESTINATION} and target like ${`${prefix}-%`}`,
    );
    const registered = Number(r!.n);
    if (registered !== FILES || Number(r!.done) !== FILES)
      throw new Error(`${prefix}: ${registered} registered, ${r!.done} DONE; ${FILES} expected`);
    const figures: RunFigures = {
      duration: (run.finished - run.started) / 1000,
      firstRegistered: (Number(r!.first) - run.started) / 1000,
      lastRegistered: (Number(r!.last) - run.started) / 1000,
      registered,
      allRetrieved: (Math.max(...retrievedAt) - run.started) / 1000,
      errLines: service.errors.length,
    };
    log(`${side.label}: first run over ${prefix}: ${JSON.stringify(figures)}`);
    return figures;
  } finally {
    await handle.close();
  }
}

/**
 * Nothing new: the host runs NOTHING_NEW_RUNS times in one server, NOTHING_NEW_FREQUENCY_MS apart, and the
 * server is stopped before the next; the last run (a warm process) is read. Answers its seconds.
 */
async function nothingNewRound(side: Side, work: string, hostId: number, prefix: string) {
  await reschedule(side, hostId, NOTHING_NEW_FREQUENCY_MS);
  const service = await serve(side, work);
  let before = -1;
  try {
    before = await runsOf(service, hostId);
    await until(
      `${NOTHING_NEW_RUNS} runs`,
      async () => (await runsOf(service, hostId)) >= before + NOTHING_NEW_RUNS,
      300_000,
      250,
    );
  } finally {
    await stop(service.child);
  }
  const handle = await side.open();
  try {
    const run = await lastRun(handle, hostId);
    const [r] = await rows<{ n: unknown }>(
      handle,
      sql`select count(*)::int as n from data_transfers where destination = ${SFTP_DESTINATION}`,
    );
    if (run.outcome !== 'done' || run.output.includes(': selected:') || !run.output.includes('not selected: exists'))
      throw new Error(`nothing-new run over ${prefix}: ${run.outcome}\n${run.output.slice(0, 2000)}`);
    const seconds = (run.finished - run.started) / 1000;
    log(`${side.label}: nothing-new run over ${prefix} (${r!.n} acquired): ${seconds.toFixed(2)} s`);
    return seconds;
  } finally {
    await handle.close();
  }
}

async function sftpScenario(side: Side, work: string, scene: SftpScene): Promise<SftpFigures> {
  pointTo(scene, scene.a);
  let handle = await side.open();
  const hostId = await addDestination(handle, SFTP_DESTINATION, 'sftp', {
    hostid: 901,
    nickname: 'acq-sftp',
    host: `127.0.0.1:${scene.sshd.port}`,
    login: scene.sshd.user,
    passwd: scene.sshd.password,
    acquisitionFrequency: HOUR_MS,
    dir: `${scene.link}/{.*\\.bin}`,
    data: '',
  });
  await handle.close();

  const listA: Listings = { login: [], open: [] };
  const listB: Listings = { login: [], open: [] };
  const nothingA: number[] = [];
  const nothingB: number[] = [];
  const firstA = await firstRun(side, work, hostId, 'a', 0);
  for (let round = 0; round < ROUNDS; round++) {
    baselines(scene, listA);
    nothingA.push(await nothingNewRound(side, work, hostId, 'a'));
  }
  pointTo(scene, scene.b);
  await reschedule(side, hostId, HOUR_MS);
  handle = await side.open();
  const [r] = await rows<{ runs: unknown }>(
    handle,
    sql`select (select sum(value::bigint) from jsonb_each_text(runs))::int as runs
      from acquisition_runs where hostid = ${hostId}`,
  );
  await handle.close();
  const firstB = await firstRun(side, work, hostId, 'b', Number(r!.runs));
  for (let round = 0; round < ROUNDS; round++) {
    baselines(scene, listB);
    nothingB.push(await nothingNewRound(side, work, hostId, 'b'));
  }
  // Out of the way of the WIS2 scenario.
  handle = await side.open();
  await handle.db.execute(sql`update hosts set active = false where hostid = ${hostId}`);
  await handle.close();
  return { label: side.label, firstA, firstB, nothingA, nothingB, listA, listB };
}

// ---------------------------------------------------------------------------------------------------------
// 2. WIS2 subscription

interface Broker {
  url: string;
  port: number;
  child: ChildProcess;
  /** Resolves once the client of this id has subscribed (Mosquitto's log). */
  subscribed(clientId: string): Promise<void>;
}

/** Debian's Mosquitto on a port of its own, in memory, logging subscriptions (line-buffered). */
async function startMosquitto(tmp: string): Promise<Broker> {
  const port = await freePort();
  const config = path.join(tmp, 'mosquitto.conf');
  fs.writeFileSync(
    config,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      // No limit on the messages queued for a subscriber (1,000 by default: a burst would be cut).
      'max_queued_messages 0',
      'log_dest stdout',
      'log_type subscribe',
      '',
    ].join('\n'),
  );
  const child = spawn('stdbuf', ['-oL', '/usr/sbin/mosquitto', '-c', config], { stdio: ['ignore', 'pipe', 'inherit'] });
  const seen = new Set<string>();
  const waiting = new Map<string, () => void>();
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    // `<time>: <client id> <qos> <topic>`
    const id = /^\d+: (\S+) \d /.exec(line)?.[1];
    if (!id) return;
    seen.add(id);
    waiting.get(id)?.();
  });
  await untilListening(port);
  return {
    url: `mqtt://127.0.0.1:${port}`,
    port,
    child,
    subscribed: (clientId) =>
      seen.has(clientId) ? Promise.resolve() : new Promise((resolve) => waiting.set(clientId, resolve)),
  };
}

/** A static file server in a process of its own. */
async function startFileServer(dir: string) {
  const script = `
    const http = require('node:http'), fs = require('node:fs'), path = require('node:path');
    const dir = process.argv[1];
    const server = http.createServer((req, res) => {
      fs.readFile(path.join(dir, path.basename(req.url)), (error, bytes) => {
        if (error) return void res.writeHead(404).end();
        res.writeHead(200, { 'content-type': 'application/bufr', 'content-length': bytes.length }).end(bytes);
      });
    });
    server.listen(0, '127.0.0.1', () => console.log(server.address().port));`;
  const child = spawn(process.execPath, ['-e', script, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) =>
    readline.createInterface({ input: child.stdout! }).once('line', (line) => resolve(Number(line))),
  );
  return { child, origin: `http://127.0.0.1:${port}` };
}

interface Announced {
  name: string;
  payload: string;
}

function announce(served: string, origin: string, name: string): Announced {
  const bytes = randomBytes(MESSAGE_BYTES);
  fs.writeFileSync(path.join(served, name), bytes);
  const now = new Date().toISOString();
  const message = {
    id: randomUUID(),
    conformsTo: ['http://wis.wmo.int/spec/wnm/1/conf/core'],
    type: 'Feature',
    geometry: null,
    properties: {
      data_id: `xx-ecpds-bench/data/core/weather/surface-based-observations/${name}`,
      pubtime: now,
      datetime: now,
      integrity: { method: 'sha512', value: createHash('sha512').update(bytes).digest('base64') },
    },
    links: [{ href: `${origin}/${name}`, rel: 'canonical', type: 'application/bufr', length: bytes.length }],
  };
  return { name, payload: JSON.stringify(message) };
}

/** A message with a new id for the same file (the baseline's copy of a service's message). */
const reissued = (a: Announced): Announced => {
  const message = JSON.parse(a.payload) as { id: string };
  message.id = randomUUID();
  return { name: a.name, payload: JSON.stringify(message) };
};

interface Consumer {
  /** Resolves with the time the file was downloadable for this consumer. */
  done(name: string): Promise<number>;
  close(): Promise<void>;
}

/** The baseline: `mosquitto_sub` on the topic, and `curl` downloading each file as its message comes, in turn. */
async function baselineConsumer(broker: Broker, topic: string, clientId: string, dir: string): Promise<Consumer> {
  fs.mkdirSync(dir, { recursive: true });
  const sub = spawn(
    'stdbuf',
    ['-oL', 'mosquitto_sub', '-h', '127.0.0.1', '-p', String(broker.port), '-q', '1', '-i', clientId, '-t', topic],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const finished = new Map<string, number>();
  const waiting = new Map<string, (at: number) => void>();
  const queue: string[] = [];
  let busy = false;
  const pump = () => {
    if (busy) return;
    const line = queue.shift();
    if (line === undefined) return;
    busy = true;
    const href = (JSON.parse(line) as { links: Array<{ href: string }> }).links[0]!.href;
    const name = path.basename(href);
    const curl = spawn('curl', ['-s', '-f', '-o', path.join(dir, name), href], { stdio: 'ignore' });
    curl.on('exit', (code) => {
      const at = performance.now();
      if (code !== 0) throw new Error(`curl ${href}: exit ${code}`);
      finished.set(name, at);
      waiting.get(name)?.(at);
      waiting.delete(name);
      busy = false;
      pump();
    });
  };
  readline.createInterface({ input: sub.stdout! }).on('line', (line) => {
    queue.push(line);
    pump();
  });
  await broker.subscribed(clientId);
  return {
    done: (name) =>
      finished.has(name) ? Promise.resolve(finished.get(name)!) : new Promise((resolve) => waiting.set(name, resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        sub.once('exit', () => resolve());
        sub.kill('SIGTERM');
      }),
  };
}

interface Delivery {
  p50: number;
  p99: number;
  max: number;
  filesPerSecond: number;
}

/** Publishes the messages one at a time (each once the one before is downloadable) or all at once. */
async function deliver(
  publisher: mqtt.MqttClient,
  topic: string,
  messages: Announced[],
  done: (name: string) => Promise<number>,
  burst: boolean,
): Promise<Delivery> {
  const latencies: number[] = [];
  let first = 0;
  let last = 0;
  if (burst) {
    const published = messages.map(() => 0);
    const arrivals = messages.map((m) => done(m.name));
    first = performance.now();
    await Promise.all(
      messages.map((m, i) => {
        published[i] = performance.now();
        return publisher.publishAsync(topic, m.payload, { qos: 1 });
      }),
    );
    const at = await Promise.all(arrivals);
    for (const [i, t] of at.entries()) latencies.push(t - published[i]!);
    last = Math.max(...at);
  } else {
    first = performance.now();
    for (const m of messages) {
      const arrival = done(m.name);
      const published = performance.now();
      await publisher.publishAsync(topic, m.payload, { qos: 1 });
      const t = await arrival;
      latencies.push(t - published);
      last = t;
    }
  }
  return {
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: Math.max(...latencies),
    filesPerSecond: messages.length / ((last - first) / 1000),
  };
}

interface Wis2Figures {
  label: string;
  single: { service: Delivery; baseline: Delivery };
  burst: { service: Delivery; baseline: Delivery };
}

async function wis2Scenario(side: Side, work: string, broker: Broker, served: string, origin: string) {
  const clientId = `bench-acq-${side.label}`;
  const serviceTopic = `${TOPIC}/${side.label}/service`;
  const baselineTopic = `${TOPIC}/${side.label}/baseline`;
  const handle = await side.open();
  await addDestination(handle, WIS2_DESTINATION, 'http', {
    hostid: 902,
    nickname: 'acq-wis2',
    host: '127.0.0.1',
    login: '',
    acquisitionFrequency: 1000,
    // One run for the whole scenario: no message waits at the broker between two runs.
    dir: `${serviceTopic}/#`,
    data: [
      'http.mqttMode = "yes"',
      `http.mqttUrl = "${broker.url}"`,
      `http.mqttSubscriberId = "${clientId}"`,
      'http.mqttAwait = "1h"',
      'acquisition.maximumDuration = "2h"',
      'acquisition.downloadHosts = "127.0.0.1"',
    ].join('\n'),
  });
  await handle.close();
  const files = (kind: string, n: number) =>
    Array.from({ length: n }, (_, i) => announce(served, origin, `${side.label}-${kind}-${i}.bufr`));
  const warm = files('warm', WARMUP_MESSAGES);
  const single = files('single', MESSAGES);
  const burst = files('burst', MESSAGES);

  const service = await serve(side, work);
  const publisher = await mqtt.connectAsync(broker.url, { clientId: `bench-publisher-${side.label}` });
  const downloads = path.join(work, `curl-${side.label}`);
  const baseline = await baselineConsumer(broker, `${baselineTopic}/#`, `bench-baseline-${side.label}`, downloads);
  try {
    await broker.subscribed(clientId);
    const stored = (name: string) => service.stored(WIS2_DESTINATION, name);
    // Warm-up, not counted: the first downloads, registrations and retrievals of each side.
    await deliver(publisher, `${serviceTopic}/warm`, warm, stored, false);
    await deliver(publisher, `${baselineTopic}/warm`, warm.map(reissued), baseline.done, false);
    const figures: Wis2Figures = {
      label: side.label,
      single: {
        service: await deliver(publisher, `${serviceTopic}/single`, single, stored, false),
        baseline: await deliver(publisher, `${baselineTopic}/single`, single.map(reissued), baseline.done, false),
      },
      burst: {
        service: await deliver(publisher, `${serviceTopic}/burst`, burst, stored, true),
        baseline: await deliver(publisher, `${baselineTopic}/burst`, burst.map(reissued), baseline.done, true),
      },
    };
    log(`${side.label}: WIS2 ${JSON.stringify(figures)}`);
    if (service.errors.length) throw new Error(`${service.errors.length} ERR line(s): ${service.errors[0]}`);
    return figures;
  } finally {
    await publisher.endAsync();
    await baseline.close();
    await stop(service.child);
    const check = await side.open();
    const [r] = await rows<{ n: unknown; stored: unknown }>(
      check,
      sql`select count(*)::int as n,
        count(*) filter (where t.status = 'DONE' and f.object_key is not null)::int as stored
        from data_transfers t join data_files f on f.id = t.data_file_id where t.destination = ${WIS2_DESTINATION}`,
    );
    await check.close();
    log(`${side.label}: WIS2 transfers ${r!.n}, DONE and stored ${r!.stored}`);
    if (Number(r!.stored) !== WARMUP_MESSAGES + 2 * MESSAGES) log('WARNING: not every message acquired and stored');
  }
}

// ---------------------------------------------------------------------------------------------------------

async function main() {
  const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-bench-acq-')));
  fs.mkdirSync(path.join(work, 'src'));
  const admin = postgres(PG.href, { max: 1, onnotice: () => undefined });
  const databases: string[] = [];
  const sftpRows: SftpFigures[] = [];
  const wis2Rows: Wis2Figures[] = [];
  let sshd: Sshd | null = null;
  let closeMaster: (() => Promise<void>) | null = null;
  let broker: Broker | null = null;
  let files: Awaited<ReturnType<typeof startFileServer>> | null = null;
  try {
    let scene: SftpScene | null = null;
    if (ONLY.includes('sftp')) {
      sshd = await startSshd();
      log(`acquisition: writing 2 × ${FILES} files`);
      const listing = sshd.scratch('acq-list-');
      const control = path.join(work, 'ssh-control');
      scene = { sshd, link: path.join(listing, 'current'), control, a: makeFiles(sshd, 'a'), b: makeFiles(sshd, 'b') };
      closeMaster = await sshMaster(sshd, control);
    }
    const served = path.join(work, 'served');
    if (ONLY.includes('wis2')) {
      fs.mkdirSync(served);
      broker = await startMosquitto(work);
      files = await startFileServer(served);
    }
    for (const label of DATABASES as Side['label'][]) {
      let side: Side;
      if (label === 'embedded') {
        const dataDir = path.join(work, 'data-embedded');
        fs.mkdirSync(dataDir);
        const pgdata = path.join(dataDir, 'pgdata');
        side = { label, env: { ECPDS_DATA_DIR: dataDir }, open: () => openPglite(pgdata) };
      } else {
        const name = `ecpds_bench_acq_${process.pid}`;
        await admin.unsafe(`drop database if exists "${name}" with (force)`);
        await admin.unsafe(`create database "${name}"`);
        databases.push(name);
        const url = new URL(PG);
        url.pathname = `/${name}`;
        side = {
          label,
          env: { ECPDS_DATA_DIR: path.join(work, 'data-postgres'), DATABASE_URL: url.href },
          open: async () => openPostgres(url.href, { max: 2 }),
        };
      }
      const handle = await side.open();
      await migrate(handle);
      await addBenchClient(handle);
      await handle.close();
      if (scene) sftpRows.push(await sftpScenario(side, work, scene));
      if (broker && files) wis2Rows.push(await wis2Scenario(side, work, broker, served, files.origin));
    }
  } finally {
    await closeMaster?.();
    await sshd?.stop();
    broker?.child.kill('SIGTERM');
    files?.child.kill('SIGTERM');
    for (const name of databases)
      await admin.unsafe(`drop database if exists "${name}" with (force)`).catch(() => undefined);
    await admin.end();
    fs.rmSync(work, { recursive: true, force: true });
  }
  writeBenchFile(report(sftpRows, wis2Rows));
}

const ms = (v: number) => `${v.toFixed(1)} ms`;
const duration = (seconds: number) =>
  seconds < 1 ? `${Math.round(seconds * 1000)} ms` : `${seconds.toFixed(seconds < 10 ? 2 : 1)} s`;
const thousands = (n: number) => n.toLocaleString('en-GB');
const shown = { embedded: 'PGlite', postgres: 'Postgres' };

function report(sftp: SftpFigures[], wis2: Wis2Figures[]) {
  const n = thousands(FILES);
  const out = [
    '## Acquisition',
    '',
    `\`node --import tsx bench/acquisition.ts\` (after \`npm run build\`), ${new Date().toISOString().slice(0, 10)}, ` +
      `${machine()}. \`ecpds-edge serve\` with its mover embedded (\`ECPDS_ACQUISITION_POLL_MS=${POLL_MS}\`, the ` +
      'directory store), on the embedded database (PGlite) and on a Postgres database of its own on this machine; ' +
      'every baseline measured in the same run, on the same machine.',
  ];
  if (sftp.length) {
    out.push(
      '',
      `**Listing and selecting over SFTP.** An Acquisition host (method \`sftp\`, password login) of a destination ` +
        `with no Dissemination host lists a directory of ${n} files of 1 KiB (\`{.*\\.bin}\`) on an OpenSSH sshd ` +
        'started by the bench on loopback. The directory is a symbolic link: to batch A, then to batch B (as many ' +
        'other files). The server is stopped between phases and the runs read from the database: a run lasts ' +
        "from its claim to its record (`acquisition_runs`), a file is registered at its transfer's `created_at`, " +
        'and stored at its RET line. First run: every file new, the embedded retriever (8 at once) storing them ' +
        `meanwhile. Nothing new: the host runs ${NOTHING_NEW_RUNS} times, ${NOTHING_NEW_FREQUENCY_MS / 1000} s ` +
        'apart, in one server, and the last run is kept (a warm process, its SFTP session kept open between runs ' +
        `by the method); median of ${ROUNDS} servers, each shown. Baseline: OpenSSH's \`sftp -b\` running ` +
        '`ls -l` of the same directory, through an open master connection (`ssh -M`, `ControlPath`: no login, as ' +
        `the service's kept session) and logging in, in turns with the nothing-new runs, median of ${ROUNDS}.`,
      '',
      '| Database | Run | Listed | Acquired before | Run (claim to record) | New files registered/s | ' +
        'First registered | All stored | Baseline `sftp -b`, open connection | Baseline, with login |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const r of sftp) {
      const db = shown[r.label as keyof typeof shown];
      const list = (l: Listings) => {
        const [open, login] = [median(l.open), median(l.login)];
        return `${duration(open)} (${thousands(Math.round(FILES / open))} entries/s) | ${duration(login)}`;
      };
      const first = (what: string, before: number, f: RunFigures, l: Listings) =>
        `| ${db} | first, ${what}: all new | ${n} | ${thousands(before)} | ${duration(f.duration)} | ` +
        `${thousands(Math.round(f.registered / f.lastRegistered))} (all in ${duration(f.lastRegistered)} from ` +
        `the run's start) | ${duration(f.firstRegistered)} | ${duration(f.allRetrieved)}` +
        `${f.errLines ? ` (${f.errLines} ERR line${f.errLines > 1 ? 's' : ''}: retrievals tried again)` : ''}` +
        ` | ${list(l)} |`;
      const nothing = (what: string, before: number, runs: number[], l: Listings) =>
        `| ${db} | nothing new, ${what} | ${n} | ${thousands(before)} | ${duration(median(runs))} ` +
        `(${runs.map(duration).join(', ')}) | - | - | - | ${list(l)} |`;
      out.push(
        first('over A', 0, r.firstA, r.listA),
        nothing('over A', FILES, r.nothingA, r.listA),
        first('over B', FILES, r.firstB, r.listB),
        nothing('over B', 2 * FILES, r.nothingB, r.listB),
      );
    }
  }
  if (wis2.length) {
    const m = thousands(MESSAGES);
    out.push(
      '',
      `**WIS2 subscription.** An Acquisition host in \`http.mqttMode\` subscribed (QoS 1, a persistent session, ` +
        "one run for the whole scenario) to Debian's Mosquitto on loopback; files of 10 KiB served by a Node HTTP " +
        `server in a process of its own; WIS2 Notification Messages (WNM, \`integrity\` sha512 and \`length\`) ` +
        `published by MQTT.js in the bench's process. ${m} messages one at a time (each published once the file ` +
        `before is downloadable), then ${m} at once, after ${WARMUP_MESSAGES} not counted. A file's latency runs ` +
        "from its publication to the moment it is downloadable from the portal: its RET line on the server's " +
        'stdout, written once the stored copy is recorded, when the transfer has left SCHE/FETC (DONE, the ' +
        "destination sending nowhere), which is what the portal's tree shows. Files/s: the messages over the " +
        'time from the first publication to the last file downloadable. Baseline: `mosquitto_sub -q 1` on a ' +
        'topic of its own receiving the same messages (new ids) and `curl` downloading each file into a ' +
        'directory as its message comes, one at a time (no check of length or digest).',
      '',
      '| Database | Messages | Service p50 | p99 | max | files/s | Baseline p50 | p99 | max | files/s |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    );
    for (const r of wis2) {
      const row = (what: string, f: { service: Delivery; baseline: Delivery }) =>
        `| ${shown[r.label as keyof typeof shown]} | ${what} | ${ms(f.service.p50)} | ${ms(f.service.p99)} | ` +
        `${ms(f.service.max)} | ${Math.round(f.service.filesPerSecond)} | ${ms(f.baseline.p50)} | ` +
        `${ms(f.baseline.p99)} | ${ms(f.baseline.max)} | ${Math.round(f.baseline.filesPerSecond)} |`;
      out.push(row(`${m}, one at a time`, r.single), row(`${m} at once`, r.burst));
    }
  }
  return out.join('\n');
}

await main();
