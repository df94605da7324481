import { SecretBox } from '../../core/common/crypto.ts';
import type { SourceProber } from '../../core/data-files/ports.ts';
import { httpOrR2Prober, httpOrR2Reader, httpSourceProber, httpSourceReader } from '../../core/data-files/sources.ts';
import type { SourceReader } from '../../core/dissemination/send.ts';
import type { ObjectStore } from '../../core/store/ports.ts';
import { openPostgres } from '../../db/client.ts';
import type { DeliveryQueue } from '../edge/deliveries.ts';
import { ConfigError, parseEnv, type WorkerEnvConfig, workerEnvSchema } from '../env.ts';
import { type CallContext, type CallScope, createFetchShell, type FetchShell } from '../fetch-shell.ts';
import { r2SourceProber, r2SourceReader, sourceBucketsOf } from './r2-sources.ts';
import { r2ObjectStore, storeBucketOf } from './r2-store.ts';

export { consoleLogger } from '../fetch-shell.ts';

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

export interface WorkerContext {
  waitUntil(work: Promise<unknown>): void;
}

/**
 * What an isolate builds once, from its environment: the app and the caches its requests share.
 * A database client never lives here: each invocation opens its own.
 */
export type Isolate = FetchShell & { config: WorkerConfig };

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

/** The Worker's shell: the fetch shell on Hyperdrive (a client per invocation), R2 sources and store. */
export function createIsolate(env: WorkerEnv): Isolate {
  const config = workerConfig(env);
  const shell = createFetchShell({
    config,
    secrets: SecretBox.fromBase64(config.ECPDS_SECRET_KEY),
    database: { open: () => openPostgres(env.HYPERDRIVE.connectionString, { perRequest: true }), perCall: true },
    sources: { reader: workerSourceReader(config, env), prober: workerSourceProber(config, env) },
    store: storeOf(config, env),
    trustProxy: false,
    abandonDownloadsAfterMs: ABANDONED_DOWNLOAD_MS,
  });
  return Object.assign(shell, { config });
}

/** What a Worker's invocation gives the shell: its waitUntil, and the client's address as Cloudflare saw it. */
export const callOf = (ctx: WorkerContext, request?: Request): CallContext => ({
  waitUntil: (work) => ctx.waitUntil(work),
  address: request?.headers.get('cf-connecting-ip') ?? undefined,
});

/** One invocation's scope (its database client through Hyperdrive). */
export const requestScope = (_env: WorkerEnv, ctx: WorkerContext, isolate: Isolate): CallScope =>
  isolate.scope(callOf(ctx));

export type { DeliveryMessage, DeliveryQueue } from '../edge/deliveries.ts';
