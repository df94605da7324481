import { SecretBox } from '../../core/common/crypto.ts';
import { httpSourceProber, remoteOnlyProber } from '../../core/data-files/sources.ts';
import type { Logger, Ports } from '../../core/ports.ts';
import { openPostgres, type DbHandle } from '../../db/client.ts';
import { createApp } from '../http/app.ts';
import { backgroundWork, createPorts, createProcessState, type ProcessState } from '../ports.ts';

/** Bindings and secrets of the Worker (wrangler.toml, `wrangler secret put`). */
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

/** What the app reads from one request's context: the scope that opens (and later closes) its database client. */
export interface RequestBindings {
  scope: RequestScope;
}

/**
 * What an isolate builds once, from its environment: the app and the caches its requests share.
 * A database client never lives here: each request opens its own.
 */
export interface Isolate {
  app: ReturnType<typeof createApp>;
  state: ProcessState;
  secrets: SecretBox;
}

export function createIsolate(env: WorkerEnv): Isolate {
  if (!env.ECPDS_SECRET_KEY) throw new Error('the ECPDS_SECRET_KEY secret is not set');
  const secrets = SecretBox.fromBase64(env.ECPDS_SECRET_KEY);
  const app = createApp({
    logger: consoleLogger,
    trustProxy: false,
    maxBodyBytes: Number(env.ECPDS_MAX_BODY_BYTES ?? 10 * 1024 * 1024),
    portsFor: (c) => (c.env as RequestBindings).scope.ports(),
    metricsPublic: /^(1|true|yes|on)$/i.test(env.ECPDS_METRICS_PUBLIC ?? ''),
    clientAddress: (c) => c.req.header('cf-connecting-ip') ?? 'unknown',
    console: { cookieSecret: secrets.derive('console-cookie') },
  });
  return { app, state: createProcessState(), secrets };
}

export interface RequestScope {
  /** The ports of this request; its database client (through Hyperdrive) is opened on first use. */
  ports(): Ports;
  /** Closes the client once the response and every piece of work handed to waitUntil are done. */
  finish(): void;
}

export function requestScope(env: WorkerEnv, ctx: WorkerContext, isolate: Isolate): RequestScope {
  let handle: DbHandle | null = null;
  let ports: Ports | null = null;
  const background = backgroundWork(consoleLogger, (work) => ctx.waitUntil(work));
  const timeoutMs = Number(env.ECPDS_SOURCE_TIMEOUT_MS ?? 10_000);
  const open = (): Ports => {
    handle = openPostgres(env.HYPERDRIVE.connectionString, { perRequest: true });
    return createPorts({
      db: handle.db,
      state: isolate.state,
      secrets: isolate.secrets,
      logger: consoleLogger,
      events: { write: (entry) => console.log(entry) },
      sources: remoteOnlyProber(httpSourceProber((env.ECPDS_SOURCE_HOSTS ?? '').split(','), timeoutMs)),
      waitUntil: background.waitUntil,
      notes: env.ECPDS_NOTES_URL ? { url: env.ECPDS_NOTES_URL, token: env.ECPDS_NOTES_TOKEN ?? null } : null,
    });
  };
  return {
    ports: () => (ports ??= open()),
    finish: () => {
      const opened = handle;
      if (opened) ctx.waitUntil(background.settled().then(() => opened.close()));
    },
  };
}
