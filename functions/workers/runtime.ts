import { SecretBox } from '../../core/common/crypto.ts';
import { createDatabaseClock, type DatabaseClock, selfMeasuringClock } from '../../core/common/database-clock.ts';
import { messageOf } from '../../core/common/errors.ts';
import type { SourceProber } from '../../core/data-files/ports.ts';
import { httpOrR2Prober, httpOrR2Reader, httpSourceProber, httpSourceReader } from '../../core/data-files/sources.ts';
import type { SourceReader } from '../../core/dissemination/send.ts';
import type { Logger, Ports } from '../../core/ports.ts';
import type { ObjectStore } from '../../core/store/ports.ts';
import { type DbHandle, openPostgres } from '../../db/client.ts';
import { readDatabaseClock } from '../../db/clock.ts';
import { ConfigError, parseEnv, type WorkerEnvConfig, workerEnvSchema } from '../env.ts';
import { createApp } from '../http/app.ts';
import { backgroundWork, createPorts, createProcessState, type ProcessState } from '../ports.ts';
import { r2SourceProber, r2SourceReader, sourceBucketsOf } from './r2-sources.ts';
import { r2ObjectStore, storeBucketOf } from './r2-store.ts';

/** Bindings and secrets of the Worker (wrangler.toml, `wrangler secret put`); values parsed by functions/env.ts. */
export interface WorkerEnv {
  HYPERDRIVE: { connectionString: string };
  ECPDS_SECRET_KEY: string;
  ECPDS_NOTES_URL?: string;
  ECPDS_NOTES_TOKEN?: string;
  ECPDS_SOURCE_HOSTS?: string;
  /** The R2 bucket bindings (`[[r2_buckets]]`) that `r2://<binding>/<key>` sources may name, comma separated. */
  ECPDS_SOURCE_BUCKETS?: string;
  /** The R2 bucket binding (`[[r2_buckets]]`) of the service's store, and the prefix of its keys there. */
  ECPDS_STORE_BINDING?: string;
  ECPDS_STORE_PREFIX?: string;
  ECPDS_SOURCE_TIMEOUT_MS?: string;
  ECPDS_MAX_BODY_BYTES?: string;
  /** `1` serves /metrics without credentials. */
  ECPDS_METRICS_PUBLIC?: string;
  /** The API's mount besides the root; `/ecpds` when unset, root only when empty or `/`. */
  ECPDS_BASE_PATH?: string;
  /** The S3 endpoint's domain for virtual-host style; unset: path style only. */
  ECPDS_PORTAL_S3_DOMAIN?: string;
  /** The queue of destinations to deliver (producer); without it the cron dispatches nothing. */
  ECPDS_QUEUE?: DeliveryQueue;
  ECPDS_EDGE_ALLOW_PRIVATE?: string;
  ECPDS_EDGE_MOVER_NAME?: string;
  ECPDS_EDGE_CONCURRENCY?: string;
  ECPDS_EDGE_LEASE_SECONDS?: string;
  ECPDS_EDGE_HEARTBEAT_SECONDS?: string;
  ECPDS_EDGE_BUDGET_SECONDS?: string;
}

/** One message of the delivery queue: a destination with due transfers the edge can send. */
export interface DeliveryMessage {
  destination: string;
}

/** What the Worker uses of its queue producer binding. */
export interface DeliveryQueue {
  send(body: DeliveryMessage): Promise<unknown>;
  sendBatch(messages: Iterable<{ body: DeliveryMessage }>): Promise<unknown>;
}

export interface WorkerContext {
  waitUntil(work: Promise<unknown>): void;
}

export const consoleLogger: Logger = {
  info: (msg, fields = {}) => console.log(JSON.stringify({ level: 'info', msg, ...fields })),
  warn: (msg, fields = {}) => console.warn(JSON.stringify({ level: 'warn', msg, ...fields })),
  error: (msg, fields = {}) => console.error(JSON.stringify({ level: 'error', msg, ...fields })),
};

/** What the app reads from one request's context: the scope that opens (and later closes) its database client. */
export interface RequestBindings {
  scope: RequestScope;
}

/**
 * What an isolate builds once, from its environment: the app and the caches its requests share.
 * A database client never lives here: each request opens its own.
 */
export interface Isolate {
  config: WorkerConfig;
  app: ReturnType<typeof createApp>;
  state: ProcessState;
  secrets: SecretBox;
  /** The database's time, as the isolate last measured it (see RequestScope.measureClock). */
  clock: DatabaseClock;
  /** The service's store (ECPDS_STORE_BINDING): puts wait for retrieval into it; null: sources read at each send. */
  store: ObjectStore | null;
}

/** The Worker's settings: the variables both shells share and its own, with the secret key required. */
export type WorkerConfig = WorkerEnvConfig & { ECPDS_SECRET_KEY: string };

export function workerConfig(env: WorkerEnv): WorkerConfig {
  const config = parseEnv(workerEnvSchema, env as unknown as Record<string, unknown>);
  if (config.ECPDS_SECRET_KEY === null) throw new ConfigError('the ECPDS_SECRET_KEY secret is not set');
  return { ...config, ECPDS_SECRET_KEY: config.ECPDS_SECRET_KEY };
}

/**
 * A download nobody reads from for this long is ended (see PortalOptions.abandonAfterMs): within the
 * 30 s the platform leaves the work after a response whose client went away.
 */
const ABANDONED_DOWNLOAD_MS = 20_000;

/**
 * The bytes of data files as a Worker reads them (no file system here): http(s) sources on
 * ECPDS_SOURCE_HOSTS, and objects of the R2 buckets of ECPDS_SOURCE_BUCKETS among its bindings.
 */
export const workerSourceReader = (config: WorkerConfig, env: WorkerEnv): SourceReader =>
  httpOrR2Reader({
    http: httpSourceReader(config.ECPDS_SOURCE_HOSTS),
    r2: r2SourceReader(config.ECPDS_SOURCE_BUCKETS, sourceBucketsOf(env)),
  });

/** The same sources, probed when a data file is registered. */
export const workerSourceProber = (config: WorkerConfig, env: WorkerEnv): SourceProber =>
  httpOrR2Prober({
    http: httpSourceProber(config.ECPDS_SOURCE_HOSTS, config.ECPDS_SOURCE_TIMEOUT_MS),
    r2: r2SourceProber(config.ECPDS_SOURCE_BUCKETS, sourceBucketsOf(env)),
  });

/**
 * The store of the service's copies of registered files: the R2 bucket bound as ECPDS_STORE_BINDING,
 * or null when that is unset. A name bound to no R2 bucket is a configuration error.
 */
export function storeOf(config: WorkerConfig, env: WorkerEnv): ObjectStore | null {
  const binding = config.ECPDS_STORE_BINDING;
  if (binding === null) return null;
  const bucket = storeBucketOf(env, binding);
  if (!bucket) throw new ConfigError(`ECPDS_STORE_BINDING: ${binding} is not an R2 bucket bound to this Worker`);
  const prefix = config.ECPDS_STORE_PREFIX;
  const description = `R2 binding ${binding}${prefix === '' ? '' : `/${prefix}`}`;
  return r2ObjectStore(bucket, { prefix, description });
}

export function createIsolate(env: WorkerEnv): Isolate {
  const config = workerConfig(env);
  const store = storeOf(config, env);
  const secrets = SecretBox.fromBase64(config.ECPDS_SECRET_KEY);
  const app = createApp({
    logger: consoleLogger,
    trustProxy: false,
    maxBodyBytes: config.ECPDS_MAX_BODY_BYTES,
    portsFor: (c) => (c.env as RequestBindings).scope.ports(),
    metricsPublic: config.ECPDS_METRICS_PUBLIC,
    basePath: config.ECPDS_BASE_PATH,
    clientAddress: (c) => c.req.header('cf-connecting-ip') ?? 'unknown',
    console: { cookieSecret: secrets.derive('console-cookie') },
    // The data portal's files whose source the Worker reads. No uploads: a Worker has nowhere to
    // keep their bytes that every mover could read back as a source.
    portal: {
      serverName: config.ECPDS_EDGE_MOVER_NAME,
      sources: workerSourceReader(config, env),
      uploads: null,
      abandonAfterMs: ABANDONED_DOWNLOAD_MS,
      s3Domain: config.ECPDS_PORTAL_S3_DOMAIN,
      cookieSecret: secrets.derive('portal-cookie'),
    },
  });
  return { config, app, state: createProcessState(), secrets, clock: createDatabaseClock(), store };
}

export interface RequestScope {
  /** The ports of this request; its database client (through Hyperdrive) is opened on first use. */
  ports(): Ports;
  /**
   * Leases and due times are judged on the database's clock, not the isolate's: the runs that claim
   * and reclaim (cron, queue) measure it first when it is stale, and again in the background when it
   * goes stale during the run. Requests only read the isolate's last measurement (the wall clock's
   * time before any), which spares them the round trips.
   */
  measureClock(): Promise<void>;
  /** Closes the client once the response and every piece of work handed to waitUntil are done. */
  finish(): void;
}

export function requestScope(env: WorkerEnv, ctx: WorkerContext, isolate: Isolate): RequestScope {
  let opened: { handle: DbHandle; ports: Ports } | null = null;
  let keepsClock = false;
  const background = backgroundWork(consoleLogger, (work) => ctx.waitUntil(work));
  const { config, clock } = isolate;
  const measure = (handle: DbHandle) =>
    clock
      .measure(() => readDatabaseClock(handle.db))
      .catch((e: unknown) => consoleLogger.warn('could not measure the database clock', { reason: messageOf(e) }));
  const open = () => {
    const handle = openPostgres(env.HYPERDRIVE.connectionString, { perRequest: true });
    const ports = createPorts({
      db: handle.db,
      state: isolate.state,
      secrets: isolate.secrets,
      logger: consoleLogger,
      events: { write: (entry) => console.log(entry) },
      sources: workerSourceProber(config, env),
      store: isolate.store,
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
      if (handle) ctx.waitUntil(background.settled().then(() => handle.close()));
    },
  };
}
