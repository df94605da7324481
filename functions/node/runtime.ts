import path from 'node:path';
import { createDatabaseClock, selfMeasuringClock } from '../../core/common/database-clock.ts';
import { messageOf } from '../../core/common/errors.ts';
import { createEngineStats, type EngineStats } from '../../core/dissemination/stats.ts';
import { sealStoredSecretOptions } from '../../core/hosts/seal-at-rest.ts';
import type { Logger, Ports } from '../../core/ports.ts';
import { sourceHostOpener } from '../../core/retrieval/source-host.ts';
import { type DbHandle, openPostgres } from '../../db/client.ts';
import { readDatabaseClock } from '../../db/clock.ts';
import { migrate } from '../../db/migrate.ts';
import { backgroundWork, createPorts, createProcessState } from '../ports.ts';
import { openStore } from '../store/open.ts';
import { nodeTransferMethods } from '../transfer-methods/index.ts';
import type { NodeConfig } from './config.ts';
import { eventSink } from './events.ts';
import { nodeHashing } from './hashing.ts';
import { acquire, assertNotHeld } from './lock.ts';
import { smtpMailer } from './mail.ts';
import { loadSecretBox } from './secrets.ts';
import { nodeSourceProber } from './sources.ts';

export interface Runtime {
  config: NodeConfig;
  handle: DbHandle;
  ports: Ports;
  /** What the movers of this process did, for /metrics. */
  engineStats: EngineStats;
  /** Wakes `listener` whenever ports.wakeMovers is called (the embedded mover). */
  onWake(listener: () => void): void;
  /** Waits for work handed to waitUntil, then closes the database. */
  close(): Promise<void>;
}

/**
 * Opens the configured database (migrated, and its hosts' secret options sealed), the secrets and
 * the ports. `hold` is for the server, which keeps the embedded data dir to itself; CLI commands
 * only check it is free.
 */
export async function openRuntime(config: NodeConfig, logger: Logger, options: { hold: boolean }): Promise<Runtime> {
  const secrets = loadSecretBox(config);
  let release = () => {};
  if (!config.databaseUrl) {
    if (options.hold) release = acquire(config.dataDir);
    else assertNotHeld(config.dataDir);
  }
  let handle: DbHandle;
  // Leases and due times are judged on the database's clock, not this machine's: movers on machines
  // whose clocks disagree would otherwise take each other's live attempts or send transfers early.
  // Measured before anything is claimed or registered; again every 30 s, and at once when this
  // machine's wall clock jumps (core/common/database-clock.ts).
  const clock = createDatabaseClock();
  const readClock = () => readDatabaseClock(handle.db);
  try {
    // Half the lease: a mover paused inside a transaction releases its locks before its lease lapses.
    const idleInTransactionMs = config.mover.leaseMs / 2;
    handle = config.databaseUrl
      ? openPostgres(config.databaseUrl, { idleInTransactionMs })
      : await openEmbedded(config.dataDir);
    await migrate(handle);
    await clock.measure(readClock);
  } catch (e) {
    release();
    throw e;
  }
  const events = eventSink(config.eventLog);
  const background = backgroundWork(logger);
  const wakeListeners = new Set<() => void>();
  // Movers in other processes hear of new work by NOTIFY: sent after the put's commit, never
  // inside its transaction (a NOTIFY takes a global lock at commit), and at most one per interval.
  let notifyPending = false;
  const notifyOthers = () => {
    const signals = handle.signals;
    if (!signals || notifyPending) return;
    notifyPending = true;
    setTimeout(() => {
      notifyPending = false;
      signals
        .notify(MOVERS_CHANNEL)
        .catch((e: unknown) => logger.warn('could not notify the movers', { reason: String(e) }));
    }, NOTIFY_INTERVAL_MS).unref();
  };
  const remeasure = () =>
    background.waitUntil(
      clock
        .measure(readClock)
        .catch((e: unknown) => logger.warn('could not measure the database clock', { reason: messageOf(e) })),
    );
  // A put to a destination with a Source host measures its source there, with the host's method.
  const sourceHostMethods = nodeTransferMethods({ fileRoots: [] });
  const closeSourceHostMethods = () => Promise.all(Object.values(sourceHostMethods).map((m) => m.close()));
  const ports = createPorts({
    db: handle.db,
    state: createProcessState(),
    secrets,
    hashing: nodeHashing,
    logger,
    events: events.sink,
    sources: nodeSourceProber({
      roots: config.sourceRoots,
      hosts: config.sourceHosts,
      timeoutMs: config.sourceTimeoutMs,
    }),
    waitUntil: background.waitUntil,
    wakeMovers: () => {
      for (const listener of wakeListeners) listener();
      notifyOthers();
    },
    notes: config.notesUrl ? { url: config.notesUrl, token: config.notesToken } : null,
    mailer: config.mail ? smtpMailer(config.mail) : null,
    clock: selfMeasuringClock(clock, remeasure),
    store: config.retrieval.enabled ? openStore(config.retrieval.store) : null,
    sourceHosts: (ports) => sourceHostOpener(ports, ports.repos.retrieval, sourceHostMethods),
  });
  try {
    // Options written in clear before secret options were sealed, or straight into the table.
    const sealed = await sealStoredSecretOptions(ports);
    if (sealed > 0) logger.info('host secret options sealed', { hosts: sealed });
  } catch (e) {
    await closeSourceHostMethods();
    await handle.close();
    await events.close();
    release();
    throw e;
  }
  return {
    config,
    handle,
    ports,
    onWake: (listener) => wakeListeners.add(listener),
    engineStats: createEngineStats(),
    async close() {
      await background.settled();
      await closeSourceHostMethods();
      await handle.close();
      await events.close();
      release();
    },
  };
}

/** The channel movers LISTEN on for new work. */
export const MOVERS_CHANNEL = 'ecpds_movers';
const NOTIFY_INTERVAL_MS = 20;

/** The embedded database, loaded only when used: a server or command on Postgres never pays for it. */
async function openEmbedded(dataDir: string): Promise<DbHandle> {
  const { openPglite } = await import('../../db/pglite.ts');
  return openPglite(path.join(dataDir, 'pgdata'));
}
