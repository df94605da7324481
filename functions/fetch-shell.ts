import type { SecretBox } from '../core/common/crypto.ts';
import { createDatabaseClock, type DatabaseClock, selfMeasuringClock } from '../core/common/database-clock.ts';
import { messageOf } from '../core/common/errors.ts';
import type { SourceProber } from '../core/data-files/ports.ts';
import type { SourceReader } from '../core/dissemination/send.ts';
import type { Logger, Ports } from '../core/ports.ts';
import type { ObjectStore } from '../core/store/ports.ts';
import type { DbHandle } from '../db/client.ts';
import { readDatabaseClock } from '../db/clock.ts';
import type { EdgeEnvConfig } from './env.ts';
import { createApp } from './http/app.ts';
import { clientAddressOf } from './http/middleware.ts';
import { backgroundWork, createPorts, createProcessState, type ProcessState } from './ports.ts';

export const consoleLogger: Logger = {
  info: (msg, fields = {}) => console.log(JSON.stringify({ level: 'info', msg, ...fields })),
  warn: (msg, fields = {}) => console.warn(JSON.stringify({ level: 'warn', msg, ...fields })),
  error: (msg, fields = {}) => console.error(JSON.stringify({ level: 'error', msg, ...fields })),
};

/** How the shell reaches its database: a client per call (Workers, a transaction pooler), or one it keeps. */
export interface DatabaseAccess {
  open(): DbHandle;
  perCall: boolean;
}

export interface FetchShellOptions {
  config: EdgeEnvConfig;
  /** The AES-256-GCM key of the host secrets, and what the console's and portal's cookies are signed with. */
  secrets: SecretBox;
  database: DatabaseAccess;
  /** Where data files' bytes are read from, and how a put probes them. */
  sources: { reader: SourceReader; prober: SourceProber };
  /** The service's store: puts wait for retrieval into it; null: sources are read at each send. */
  store: ObjectStore | null;
  /** Behind a TLS-terminating proxy (ECPDS_TRUST_PROXY): X-Forwarded-Proto and X-Forwarded-For are believed. */
  trustProxy: boolean;
  /**
   * Uploads through the portal have nowhere to be kept that every mover could read back as a
   * source, so a fetch shell takes none; a download nobody reads from for this long is ended.
   */
  abandonDownloadsAfterMs?: number;
  logger?: Logger;
}

/** What the runtime gives one call: somewhere to hand work that outlives the response, and the peer's address. */
export interface CallContext {
  waitUntil(work: Promise<unknown>): void;
  /** The peer's address as the runtime saw it; behind a trusted proxy the forwarded one wins. */
  address?: string;
}

/** A call's database client and ports, opened on first use and closed once its work is done. */
export interface CallScope {
  ports(): Ports;
  /**
   * Leases and due times are judged on the database's clock, not the runtime's: the runs that claim
   * and reclaim (cron, queue) measure it first when it is stale, and again in the background when it
   * goes stale during the run. Requests only read the last measurement, which spares them round trips.
   */
  measureClock(): Promise<void>;
  /** Closes a per-call client once the response and the work handed to waitUntil are done. */
  finish(): void;
}

export interface FetchShell {
  config: EdgeEnvConfig;
  app: ReturnType<typeof createApp>;
  state: ProcessState;
  secrets: SecretBox;
  clock: DatabaseClock;
  store: ObjectStore | null;
  logger: Logger;
  fetch(request: Request, call: CallContext): Promise<Response>;
  /** Runs `work` (a cron run, a queue batch) with a scope of its own, finished however `work` ends. */
  run<T>(call: CallContext, work: (scope: CallScope) => Promise<T>): Promise<T>;
  scope(call: CallContext): CallScope;
}

/** What the app reads from a request's bindings. */
interface Bindings {
  scope: CallScope;
  address?: string;
}

/**
 * The whole app (API, console, portal over HTTPS, S3 under /portal/s3) as one fetch handler, for any
 * runtime: its entry gives the database, the sources, the store and the call's context.
 */
export function createFetchShell(options: FetchShellOptions): FetchShell {
  const { config, database, store, trustProxy, secrets } = options;
  const logger = options.logger ?? consoleLogger;
  const state = createProcessState();
  const clock = createDatabaseClock();
  let kept: DbHandle | null = null;
  const handleFor = () => (database.perCall ? database.open() : (kept ??= database.open()));

  const scope = (call: CallContext): CallScope => {
    let opened: { handle: DbHandle; ports: Ports } | null = null;
    let keepsClock = false;
    const background = backgroundWork(logger, (work) => call.waitUntil(work));
    const measure = (handle: DbHandle) =>
      clock
        .measure(() => readDatabaseClock(handle.db))
        .catch((e: unknown) => logger.warn('could not measure the database clock', { reason: messageOf(e) }));
    const open = () => {
      const handle = handleFor();
      const ports = createPorts({
        db: handle.db,
        state,
        secrets,
        logger,
        events: { write: (entry) => console.log(entry) },
        sources: options.sources.prober,
        store,
        waitUntil: background.waitUntil,
        notes: config.ECPDS_NOTES_URL ? { url: config.ECPDS_NOTES_URL, token: config.ECPDS_NOTES_TOKEN } : null,
        clock: selfMeasuringClock(clock, () => {
          if (keepsClock) background.waitUntil(measure(handle));
        }),
      });
      return { handle, ports };
    };
    return {
      ports: () => (opened ??= open()).ports,
      async measureClock() {
        keepsClock = true;
        opened ??= open();
        if (clock.stale()) await measure(opened.handle);
      },
      finish: () => {
        const handle = opened?.handle;
        if (handle && database.perCall) call.waitUntil(background.settled().then(() => handle.close()));
      },
    };
  };

  const app = createApp({
    logger,
    trustProxy,
    maxBodyBytes: config.ECPDS_MAX_BODY_BYTES,
    portsFor: (c) => (c.env as Bindings).scope.ports(),
    metricsPublic: config.ECPDS_METRICS_PUBLIC,
    basePath: config.ECPDS_BASE_PATH,
    clientAddress: (c) => clientAddressOf(c, trustProxy, () => (c.env as Bindings).address),
    console: { cookieSecret: secrets.derive('console-cookie') },
    portal: {
      serverName: config.ECPDS_EDGE_MOVER_NAME,
      sources: options.sources.reader,
      uploads: null,
      abandonAfterMs: options.abandonDownloadsAfterMs,
      s3Domain: config.ECPDS_PORTAL_S3_DOMAIN,
      cookieSecret: secrets.derive('portal-cookie'),
    },
  });

  const run = async <T>(call: CallContext, work: (scope: CallScope) => Promise<T>): Promise<T> => {
    const callScope = scope(call);
    try {
      return await work(callScope);
    } finally {
      callScope.finish();
    }
  };

  return {
    config,
    app,
    state,
    secrets,
    clock,
    store,
    logger,
    scope,
    run,
    fetch: (request, call) =>
      run(call, async (callScope) => {
        const bindings: Bindings = { scope: callScope, address: call.address };
        return app.fetch(request, bindings, { waitUntil: call.waitUntil, passThroughOnException() {}, props: {} });
      }),
  };
}

/** Work handed over by a long-lived process: kept running, its failures logged by the scope that handed it. */
export const keepRunning: CallContext['waitUntil'] = (work) => void work.catch(() => {});
