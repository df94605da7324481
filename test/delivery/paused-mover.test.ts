import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { restore } from '../../core/backups/handlers.ts';
import { parseBackupBody } from '../../core/backups/schema.ts';
import { SecretBox } from '../../core/common/crypto.ts';
import { put } from '../../core/data-files/handlers.ts';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import type { Ports } from '../../core/ports.ts';
import type { DbHandle } from '../../db/client.ts';
import { dataTransfers, transferHistory } from '../../db/schema.ts';
import { nodeSourceProber } from '../../functions/node/sources.ts';
import { backgroundWork, createPorts, createProcessState } from '../../functions/ports.ts';
import { destinationBackup } from '../support/backups.ts';
import { freshPostgres } from '../support/database.ts';
import { eventually } from '../support/engine.ts';
import { killAll, type ServerProcess, startMoverProcess, tempDir } from '../support/processes.ts';
import { type SlowProxy, startSlowProxy } from '../support/servers/slow-proxy.ts';
import { type SlowSource, startSlowSource } from '../support/servers/slow-source.ts';
import { type FileOperation, mostOpenAtOnce, type Sshd, sshdMissing, startSshd } from '../support/servers/sshd.ts';
import { scaled } from '../support/time.ts';

/**
 * A mover process paused (SIGSTOP) in the middle of a send for longer than its lease, while a
 * second mover takes the transfer over, then resumed (SIGCONT) while the second one is still
 * sending: once with a slow source, once with a slow link (a window's worth of the paused mover's
 * writes on the way, left to land before the second mover starts; the answers wait for it, and
 * with them the room to write more). Measured at a real sshd whose sftp-server logs
 * every open, write, close, rename and remove of each session, and in the database: the stale
 * attempt writes nothing more once the take-over began, never renames, never touches the live
 * attempt's file; one DONE and no failure after the take-over; the file whole; nothing else left.
 */
const url = process.env.TEST_DATABASE_URL;
const noSshd = sshdMissing();

const LEASE_SECONDS = 4;
const key = randomBytes(32);
let databaseUrl: string;
let handle: DbHandle & { url: string };
let ports: Ports;
let sources: string;
let source: SlowSource;
let sshd: Sshd;
let link: SlowProxy;
const movers: ServerProcess[] = [];

beforeAll(async () => {
  if (!url || noSshd) return;
  handle = await freshPostgres(url);
  databaseUrl = handle.url;
  sources = fs.realpathSync(tempDir('ecpds-paused-mover-'));
  source = await startSlowSource(sources, 400_000);
  sshd = await startSshd({ logWrites: true });
  link = await startSlowProxy(sshd.port, 1_000_000);
  const logger = { info() {}, warn() {}, error() {} };
  ports = createPorts({
    db: handle.db,
    state: createProcessState(),
    secrets: new SecretBox(new Uint8Array(key)),
    logger,
    events: { write() {} },
    sources: nodeSourceProber({ roots: [sources], hosts: [source.host], timeoutMs: 5000 }),
    waitUntil: backgroundWork(logger).waitUntil,
  });
}, scaled(60_000));
afterAll(async () => {
  if (!url || noSshd) return;
  await handle?.close();
  await source?.stop();
  await link?.stop();
  await sshd?.stop();
});

function startMover(name: string) {
  const mover = startMoverProcess(
    {
      DATABASE_URL: databaseUrl,
      ECPDS_SECRET_KEY: key.toString('base64'),
      ECPDS_SOURCE_ROOTS: sources,
      ECPDS_SOURCE_HOSTS: source.host,
      ECPDS_MOVER_LEASE_SECONDS: String(LEASE_SECONDS),
      ECPDS_MOVER_HEARTBEAT_SECONDS: '1',
      ECPDS_MOVER_POLL_MS: '100',
      ECPDS_MOVER_DRAIN_SECONDS: '1',
      ECPDS_SWEEP_SECONDS: '0',
    },
    ['--name', name],
  );
  movers.push(mover);
  return mover;
}

let hostIds = 7000;
async function sftpDestination(name: string, port: number) {
  const dir = sshd.scratch(`${name.toLowerCase()}-`);
  const host = { method: 'sftp' as const, host: `127.0.0.1:${port}`, login: sshd.user, passwd: sshd.password, dir };
  const backup = parseBackupBody(destinationBackup(name, [host], { nextHostId: () => ++hostIds }));
  if (!backup.ok) throw new Error(backup.problem);
  await ports.repos.transaction((repos) =>
    restore({ ports, requestId: 't', caller: null }, repos, backup.backup, false),
  );
  await setDestinationStatus(ports, 'test', name, 'start');
  return dir;
}

async function putFile(destination: string, from: string, bytes: number) {
  const content = randomBytes(bytes);
  fs.writeFileSync(path.join(sources, `${destination}.bin`), content);
  const { id } = await put({
    ctx: { ports, requestId: 't', caller: { username: 'test', showSensitiveInfo: false } },
    input: { destination, source: from, target: 'f.bin' },
  } as Parameters<typeof put>[0]);
  const [transfer] = await handle.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, id));
  return { id: transfer!.id, md5: createHash('md5').update(content).digest('hex') };
}

const transferOf = async (id: number) =>
  (await handle.db.select().from(dataTransfers).where(eq(dataTransfers.id, id)))[0]!;
const historyOf = (id: number) =>
  handle.db.select().from(transferHistory).where(eq(transferHistory.transferId, id)).orderBy(asc(transferHistory.id));

/** The file operations of the session that opened `file` for writing. */
function sessionWriting(file: string): FileOperation[] | undefined {
  const operations = sshd.fileOperations();
  const opened = operations.find((op) => op.kind === 'open' && op.path === file);
  return opened && operations.filter((op) => op.session === opened.session);
}
/** True once nothing has passed the slow link for half a second. */
function linkQuiet() {
  let seen = -1;
  return async () => {
    const passed = link.passed();
    if (passed !== seen) {
      seen = passed;
      return undefined;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    return link.passed() === seen ? true : undefined;
  };
}
const writesTo = (file: string) => async () =>
  (sessionWriting(file)?.filter((op) => op.kind === 'write' && op.path === file).length ?? 0) >= 2 ? true : undefined;

describe.skipIf(!url || noSshd !== null)('a mover paused past its lease, then resumed', () => {
  // A test that failed half way leaves no mover to claim the next one's transfer.
  afterEach(async () => {
    for (const m of movers.splice(0)) m.child.kill('SIGCONT');
    await killAll();
  });
  it.each([
    { variant: 'a slow source', name: 'SLOW_SOURCE', bytes: 4 * 1024 * 1024, slowLink: false },
    { variant: 'a slow link', name: 'SLOW_LINK', bytes: 8 * 1024 * 1024, slowLink: true },
  ])(
    'with $variant: the taker delivers once; the resumed mover never writes, renames or removes its file again',
    async ({ name, bytes, slowLink }) => {
      const dir = await sftpDestination(name, slowLink ? link.port : sshd.port);
      const paused = startMover(`${name.toLowerCase()}-paused`);
      let transferId: number | undefined;
      let taker: ServerProcess | undefined;
      // What the movers said and the transfer went through, to tell a slow machine from a wrong outcome.
      onTestFailed(async () => {
        const history = transferId === undefined ? [] : await historyOf(transferId);
        console.error(
          'history',
          history.map((r) => [r.status, r.comment]),
        );
        for (const m of [paused, taker])
          console.error(
            'mover log',
            m?.logs().filter((l) => l.level !== 'info'),
          );
      });
      await paused.ready;
      const from = slowLink ? path.join(sources, `${name}.bin`) : source.url(`${name}.bin`);
      const sent = await putFile(name, from, bytes);
      transferId = sent.id;
      const finalPath = path.join(dir, 'f.bin');
      const staleFile = `${finalPath}.${sent.id}-1.tmp`;
      const liveFile = `${finalPath}.${sent.id}-2.tmp`;

      // Paused once the server has taken a few of its writes: its temporary file is open there.
      await eventually(writesTo(staleFile), 20_000, 'the first attempt writing');
      paused.child.kill('SIGSTOP');
      const pausedAt = Date.now();
      // What it sent before the pause is on the wire (a window's worth over the slow link): it lands
      // before the take-over, so that whatever the server gets from it afterwards was sent after.
      await eventually(linkQuiet(), 20_000, 'the bytes of the paused mover to land');
      taker = startMover(`${name.toLowerCase()}-taker`);
      await taker.ready;
      await eventually(
        async () => ((await transferOf(sent.id)).attempt === 2 ? true : undefined),
        (LEASE_SECONDS + 10) * 1000,
        'the take-over',
      );
      // Resumed while the live attempt is half way: its file is there to be touched.
      await eventually(writesTo(liveFile), 20_000, 'the second attempt writing');
      const pausedFor = Date.now() - pausedAt;
      paused.child.kill('SIGCONT');

      const done = await eventually(
        async () => {
          const t = await transferOf(sent.id);
          return t.status === 'DONE' ? t : undefined;
        },
        40_000,
        'DONE',
      );
      // The resumed attempt has ended once its session has.
      await eventually(
        async () => (sessionWriting(staleFile)?.some((op) => op.kind === 'session closed') ? true : undefined),
        10_000,
        'the paused session closed',
      );
      expect(await paused.stop()).toBe(true);
      expect(await taker.stop()).toBe(true);

      // The database: the pause lapsed the lease; the taker's attempt ended DONE, with nothing else after its claim.
      expect(pausedFor).toBeGreaterThan(LEASE_SECONDS * 1000);
      expect(done.attempt).toBe(2);
      const history = (await historyOf(sent.id)).map((r) => [r.status, r.comment]);
      expect(history.slice(0, 5)).toEqual([
        ['WAIT', 'Registered by test'],
        ['EXEC', `Claimed by ${name.toLowerCase()}-paused`],
        ['INTR', `Interrupted: lost DataMover ${name.toLowerCase()}-paused`],
        ['RETR', `Requeued after losing DataMover ${name.toLowerCase()}-paused`],
        ['EXEC', `Claimed by ${name.toLowerCase()}-taker`],
      ]);
      expect(history.slice(5).map(([status]) => status)).toEqual(['DONE']);

      // The target directory: the file whole, nothing else.
      expect(createHash('md5').update(fs.readFileSync(finalPath)).digest('hex')).toBe(sent.md5);
      expect(fs.readdirSync(dir)).toEqual(['f.bin']);

      // The server: the stale session still held its file open when the take-over began (the live
      // attempt's first step, the removal of the stale file).
      const stale = sessionWriting(staleFile)!;
      const live = sessionWriting(liveFile)!;
      const takeOver = live.find((op) => op.path.startsWith(`${finalPath}.`))!;
      expect([takeOver.kind, takeOver.path]).toEqual(['remove', staleFile]);
      const staleOpened = stale.find((op) => op.kind === 'open')!;
      const staleClosed = stale.find(
        (op) => (op.kind === 'close' && op.path === staleFile) || op.kind === 'session closed',
      )!;
      expect(staleOpened.position).toBeLessThan(takeOver.position);
      expect(staleClosed.position).toBeGreaterThan(takeOver.position);
      // From then on the stale session wrote, opened and renamed nothing, and removed only its own
      // file (gone already): it never touched the live attempt's file nor the final name.
      const afterTakeOver = stale.filter((op) => op.position > takeOver.position && op.kind !== 'session closed');
      expect(afterTakeOver.filter((op) => op.kind !== 'close' && op.kind !== 'remove')).toEqual([]);
      expect(afterTakeOver.filter((op) => op.path !== staleFile)).toEqual([]);
      // The live attempt alone renamed into place, once.
      const renames = sshd.fileOperations().filter((op) => op.kind === 'rename' && op.path.startsWith(`${finalPath}.`));
      expect(renames.map((op) => [op.session, op.path, op.to])).toEqual([[live[0]!.session, liveFile, finalPath]]);
      // Bytes reached one file at a time: the stale session's last write came before the live one's open.
      const writing = sshd
        .openWrites()
        .filter((s) => s.path.startsWith(`${finalPath}.`))
        .map((s) => ({ ...s, closed: s.lastWrite }));
      expect(writing.map((s) => s.path)).toEqual([staleFile, liveFile]);
      expect(mostOpenAtOnce(writing)).toBe(1);
    },
    90_000,
  );
});
