import { createCredentialCache } from '../../core/auth.ts';
import { createMemo } from '../../core/memo.ts';
import { createViewCache } from '../../core/view-cache.ts';
import { createAuthThrottle } from '../../core/auth-throttle.ts';
import { SecretBox } from '../../core/crypto.ts';
import type { AuthThrottle, CredentialCache, Memo, ViewCache, Logger, Ports } from '../../core/ports.ts';
import { httpNotePublisher } from '../../core/services/notes.ts';
import { httpSourceProber, remoteOnlyProber } from '../../core/sources.ts';
import { openPostgres, type DbHandle } from '../../db/client.ts';
import { createRepositories } from '../../db/repositories/index.ts';
import { ConfigError, parseEnv, sharedEnvSchema, type SharedEnv } from '../env.ts';

/** Bindings and secrets of the Worker (wrangler.toml, `wrangler secret put`); values parsed by functions/env.ts. */
export interface WorkerEnv {
  HYPERDRIVE: { connectionString: string };
  ECPDS_SECRET_KEY: string;
  ECPDS_NOTES_URL?: string;
  ECPDS_NOTES_TOKEN?: string;
  ECPDS_SOURCE_HOSTS?: string;
  ECPDS_SOURCE_TIMEOUT_MS?: string;
  ECPDS_MAX_BODY_BYTES?: string;
  /** `1` serves /metrics without credentials. */
  ECPDS_METRICS_PUBLIC?: string;
}

export interface WorkerContext {
  waitUntil(work: Promise<unknown>): void;
}

export const consoleLogger: Logger = {
  info: (msg, fields = {}) => console.log(JSON.stringify({ level: 'info', msg, ...fields })),
  warn: (msg, fields = {}) => console.warn(JSON.stringify({ level: 'warn', msg, ...fields })),
  error: (msg, fields = {}) => console.error(JSON.stringify({ level: 'error', msg, ...fields })),
};

// Only a cache of verified credentials lives across requests of an isolate; never config or a client.
let credentialCache: CredentialCache | null = null;
// Reference data only a migration changes (see Ports.memo).
let memo: Memo | null = null;
// Rendered lists with their versions: strings only, no I/O object of any request.
let views: ViewCache | null = null;
// Failed authentications are counted per isolate: a bound on guessing, not a global ledger.
let authThrottle: AuthThrottle | null = null;

/** The Worker's settings: the variables both shells share, with the secret key required. */
export type WorkerConfig = SharedEnv & { ECPDS_SECRET_KEY: string };

/** Read from the bindings at every request, like the rest of a request's state. */
export function workerConfig(env: WorkerEnv): WorkerConfig {
  const config = parseEnv(sharedEnvSchema, env as unknown as Record<string, unknown>);
  if (config.ECPDS_SECRET_KEY === null) throw new ConfigError('the ECPDS_SECRET_KEY secret is not set');
  return { ...config, ECPDS_SECRET_KEY: config.ECPDS_SECRET_KEY };
}

/**
 * The ports of one request or cron run: a database client of its own (through Hyperdrive),
 * closed once the response and every piece of work handed to waitUntil are done.
 */
export function requestPorts(
  env: WorkerEnv,
  ctx: WorkerContext,
): { ports: () => Ports; finish: () => void; config: WorkerConfig } {
  const config = workerConfig(env);
  let handle: DbHandle | null = null;
  let ports: Ports | null = null;
  const pending: Promise<unknown>[] = [];
  const build = (): Ports => {
    handle = openPostgres(env.HYPERDRIVE.connectionString, { perRequest: true });
    credentialCache ??= createCredentialCache(crypto.getRandomValues(new Uint8Array(32)));
    authThrottle ??= createAuthThrottle();
    memo ??= createMemo();
    views ??= createViewCache();
    return {
      repos: createRepositories(handle.db),
      clock: () => new Date(),
      secrets: SecretBox.fromBase64(config.ECPDS_SECRET_KEY),
      logger: consoleLogger,
      credentialCache,
      memo,
      views,
      authThrottle,
      waitUntil: (work) => {
        const settled = work.catch((e: unknown) => consoleLogger.error('background work failed', { reason: e instanceof Error ? e.message : String(e) }));
        pending.push(settled);
        ctx.waitUntil(settled);
      },
      notes: config.ECPDS_NOTES_URL ? httpNotePublisher(config.ECPDS_NOTES_URL, config.ECPDS_NOTES_TOKEN) : null,
      events: { write: (entry) => console.log(entry) },
      sources: remoteOnlyProber(httpSourceProber(config.ECPDS_SOURCE_HOSTS, config.ECPDS_SOURCE_TIMEOUT_MS)),
    };
  };
  return {
    config,
    ports: () => (ports ??= build()),
    finish: () => {
      const open = handle;
      if (open) ctx.waitUntil(Promise.allSettled(pending).then(() => open.close()));
    },
  };
}
