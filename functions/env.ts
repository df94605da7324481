import { z } from 'zod';
import { isBindingName } from '../core/data-files/r2-sources.ts';
import { DEFAULT_PORTAL_RECHECK_MS } from '../core/portal/revocation.ts';

/**
 * The environment variables of both shells, in one zod schema: the Workers shell reads the shared
 * ones from its bindings, the Node shell all of them from process.env. No Node built-ins here, so
 * Workers load it too; paths are made absolute by the Node shell.
 */

/** A value the operator got wrong; the message names the variable. */
export class ConfigError extends Error {}

// `VAR= command` sets a variable to '': read as unset, so the default applies. Workers `vars`
// may be TOML numbers or booleans: read as the text they were written as.
const unsetIfEmpty = (v: unknown) =>
  v === '' ? undefined : typeof v === 'number' || typeof v === 'boolean' ? String(v) : v;

const text = () => z.preprocess(unsetIfEmpty, z.string().optional()).transform((v) => v ?? null);

const flag = (name: string, fallback: boolean) =>
  z.preprocess(
    unsetIfEmpty,
    z
      .stringbool({
        truthy: ['1', 'true', 'yes', 'on'],
        falsy: ['0', 'false', 'no', 'off'],
        error: (issue) => `${name} must be a flag (expected 1/0 or true/false), got '${String(issue.input)}'`,
      })
      .default(fallback),
  );

const integer = (name: string, fallback: number, min: number, max: number) =>
  z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .optional()
      .transform((v, ctx) => {
        if (v === undefined) return fallback;
        // Number() as before: ' 8443 ' and '1e3' are read as numbers too.
        const n = Number(v);
        if (Number.isInteger(n) && n >= min && n <= max) return n;
        const message = `${name} must be an integer from ${min} to ${max}, got '${v}'`;
        ctx.issues.push({ code: 'custom', input: v, message });
        return z.NEVER;
      }),
  );

const list = (separator: RegExp) =>
  z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .optional()
      .transform((v) =>
        (v ?? '')
          .split(separator)
          .map((s) => s.trim())
          .filter((s) => s !== ''),
      ),
  );

/** Names of a Worker's bindings, comma separated: each a JavaScript identifier, as `env.<name>` reads it. */
const bindingNames = (name: string) =>
  list(/,/).transform((names, ctx) => {
    const wrong = names.filter((n) => !isBindingName(n));
    if (wrong.length === 0) return names;
    const message = `${name} must name bindings (comma separated identifiers), got '${wrong.join("', '")}'`;
    ctx.issues.push({ code: 'custom', input: wrong, message });
    return z.NEVER;
  });

/** One binding's name, or null when unset. */
const bindingName = (name: string) =>
  text().transform((v, ctx) => {
    const binding = v?.trim() ?? '';
    if (binding === '') return null;
    if (isBindingName(binding)) return binding;
    ctx.issues.push({ code: 'custom', input: v, message: `${name} must name a binding (an identifier), got '${v}'` });
    return z.NEVER;
  });

/** A key prefix of an object store: no slash at either end, no control character; empty when unset. */
const keyPrefix = (name: string) =>
  text().transform((v, ctx) => {
    const prefix = (v ?? '').trim().replace(/^\/+|\/+$/g, '');
    if (!/[\u0000-\u001f\u007f-\u009f]/.test(prefix) && new TextEncoder().encode(prefix).length <= 512) return prefix;
    const message = `${name} must be a key prefix of at most 512 bytes without control characters`;
    ctx.issues.push({ code: 'custom', input: v, message });
    return z.NEVER;
  });

/**
 * The path prefix the API is served under besides the root (the reference server's `/ecpds`
 * context). Unset means `/ecpds`; an empty value or `/` serves the root only (null).
 */
const basePath = (name: string) =>
  z
    .preprocess((v) => (typeof v === 'string' ? v.trim() : v), z.string().optional())
    .transform((v, ctx) => {
      if (v === undefined) return '/ecpds';
      const path = v.replace(/\/+$/, '');
      if (path === '') return null;
      if (/^(\/[\w.~-]+)+$/.test(path)) return path;
      ctx.issues.push({ code: 'custom', input: v, message: `${name} must be a path such as /ecpds, got '${v}'` });
      return z.NEVER;
    });

/** The S3 endpoint's domain for virtual-host style (`<bucket>.<domain>`): a DNS name, or unset. */
const s3Domain = () =>
  text().transform((v, ctx) => {
    if (v === null || v === undefined || v.trim() === '') return null;
    const name = v.trim().toLowerCase();
    if (/^([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(name)) return name;
    ctx.issues.push({ code: 'custom', input: v, message: `ECPDS_PORTAL_S3_DOMAIN must be a DNS name, got '${v}'` });
    return z.NEVER;
  });

/** Read by both shells. */
export const sharedEnvSchema = z.object({
  ECPDS_SECRET_KEY: text(),
  ECPDS_NOTES_URL: text(),
  ECPDS_NOTES_TOKEN: text(),
  ECPDS_SOURCE_HOSTS: list(/,/),
  ECPDS_SOURCE_TIMEOUT_MS: integer('ECPDS_SOURCE_TIMEOUT_MS', 10_000, 100, 600_000),
  ECPDS_MAX_BODY_BYTES: integer('ECPDS_MAX_BODY_BYTES', 10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  ECPDS_METRICS_PUBLIC: flag('ECPDS_METRICS_PUBLIC', false),
  ECPDS_BASE_PATH: basePath('ECPDS_BASE_PATH'),
  ECPDS_PORTAL_S3_DOMAIN: s3Domain(),
  // The reference's maxTransferLife and maxIdentityCount: what the sweep keeps of ended transfers.
  ECPDS_MAX_TRANSFER_LIFE_DAYS: integer('ECPDS_MAX_TRANSFER_LIFE_DAYS', 210, 1, 36_500),
  ECPDS_MAX_IDENTITY_COUNT: integer('ECPDS_MAX_IDENTITY_COUNT', 7, 1, 1_000_000),
  ECPDS_PURGE_BATCH: integer('ECPDS_PURGE_BATCH', 1000, 1, 100_000),
});

/** What a long-lived server reads, on Node as on Bun and Deno: where it listens, its database and data. */
const serverShape = {
  HOST: text().transform((v) => v ?? '127.0.0.1'),
  PORT: integer('PORT', 8443, 0, 65535),
  ECPDS_DATA_DIR: text().transform((v) => v ?? './data'),
  DATABASE_URL: text(),
  TLS_CERT_FILE: text(),
  TLS_KEY_FILE: text(),
  ECPDS_TRUST_PROXY: flag('ECPDS_TRUST_PROXY', false),
  ECPDS_PROPERTIES: text(),
};

/** A certificate without its key, or a key without its certificate, is a mistake, not a self-signed start. */
export function assertTlsPair(env: { TLS_CERT_FILE: string | null; TLS_KEY_FILE: string | null }) {
  if ((env.TLS_CERT_FILE === null) !== (env.TLS_KEY_FILE === null)) {
    throw new ConfigError('TLS_CERT_FILE and TLS_KEY_FILE must be given together');
  }
}

/**
 * The edge mover's, wherever it runs: the shared variables plus how it delivers. A Worker
 * invocation keeps at most six connections open at once, and each send holds two (the source and
 * the destination) besides the database's: two sends at a time by default.
 */
export const edgeEnvSchema = sharedEnvSchema.extend({
  /** Test only: a local workerd reaches loopback and private servers, a deployed Worker never does. */
  ECPDS_EDGE_ALLOW_PRIVATE: flag('ECPDS_EDGE_ALLOW_PRIVATE', false),
  ECPDS_EDGE_MOVER_NAME: text().transform((v) => v ?? 'edge'),
  ECPDS_EDGE_CONCURRENCY: integer('ECPDS_EDGE_CONCURRENCY', 2, 1, 16),
  ECPDS_EDGE_LEASE_SECONDS: integer('ECPDS_EDGE_LEASE_SECONDS', 60, 2, 3600),
  ECPDS_EDGE_HEARTBEAT_SECONDS: integer('ECPDS_EDGE_HEARTBEAT_SECONDS', 15, 1, 900),
  ECPDS_EDGE_BUDGET_SECONDS: integer('ECPDS_EDGE_BUDGET_SECONDS', 300, 1, 840),
});

/** The Workers shell's: the edge's variables plus its R2 bindings. */
export const workerEnvSchema = edgeEnvSchema.extend({
  /** The R2 bucket bindings that `r2://<binding>/<key>` sources may name (none by default). */
  ECPDS_SOURCE_BUCKETS: bindingNames('ECPDS_SOURCE_BUCKETS'),
  /** The R2 bucket binding the service keeps its copy of every registered file in, and the keys' prefix there. */
  ECPDS_STORE_BINDING: bindingName('ECPDS_STORE_BINDING'),
  ECPDS_STORE_PREFIX: keyPrefix('ECPDS_STORE_PREFIX'),
});

/**
 * The fetch entries' (Bun, Deno, AWS Lambda): the edge's variables plus where the database is
 * (Postgres, pooled or through a transaction pooler; the embedded database in ECPDS_DATA_DIR when
 * DATABASE_URL is unset) and whether a TLS-terminating proxy stands in front. The store is read by
 * functions/store/config.ts from the same environment.
 */
export const fetchEnvSchema = edgeEnvSchema.extend({
  ...serverShape,
  /** `transaction`: DATABASE_URL is a transaction pooler (PgBouncer, RDS Proxy): a client per request. */
  ECPDS_DATABASE_POOLER: z.preprocess(unsetIfEmpty, z.enum(['session', 'transaction']).default('session')),
  ECPDS_DATABASE_MAX: integer('ECPDS_DATABASE_MAX', 10, 1, 1000),
  /** `neon`: Postgres over a WebSocket, for runtimes without TCP; ECPDS_NEON_WS_PROXY names a proxy of one's own. */
  ECPDS_DATABASE_DRIVER: z.preprocess(unsetIfEmpty, z.enum(['postgres', 'neon']).default('postgres')),
  ECPDS_NEON_WS_PROXY: text(),
  /** Seconds between the edge mover's rounds where a timer drives it (Bun, Deno without Deno.cron); 0: none. */
  ECPDS_EDGE_EVERY_SECONDS: integer('ECPDS_EDGE_EVERY_SECONDS', 60, 0, 86_400),
});

/** The Node shell's: the shared variables plus the server's, the files' and the embedded database's. */
export const nodeEnvSchema = sharedEnvSchema.extend({
  ...serverShape,
  ECPDS_DEMO: flag('ECPDS_DEMO', true),
  ECPDS_SOURCE_ROOTS: list(/[,:]/),
  ECPDS_EVENT_LOG: text(),
  ECPDS_SWEEP_SECONDS: integer('ECPDS_SWEEP_SECONDS', 60, 0, 86_400),
  ECPDS_MOVER: flag('ECPDS_MOVER', true),
  ECPDS_MOVER_NAME: text(),
  ECPDS_MOVER_CONCURRENCY: integer('ECPDS_MOVER_CONCURRENCY', 8, 1, 1024),
  ECPDS_MOVER_LEASE_SECONDS: integer('ECPDS_MOVER_LEASE_SECONDS', 60, 2, 3600),
  ECPDS_MOVER_HEARTBEAT_SECONDS: integer('ECPDS_MOVER_HEARTBEAT_SECONDS', 15, 1, 900),
  ECPDS_MOVER_POLL_MS: integer('ECPDS_MOVER_POLL_MS', 1000, 20, 60_000),
  ECPDS_MOVER_DRAIN_SECONDS: integer('ECPDS_MOVER_DRAIN_SECONDS', 30, 0, 3600),
  ECPDS_FILE_HOST_ROOTS: list(/[,:]/),
  ECPDS_RETRIEVAL: text().transform((v, ctx) => {
    if (v === null || v === 'store') return 'store' as const;
    if (v === 'none') return 'none' as const;
    ctx.addIssue({ code: 'custom', message: `ECPDS_RETRIEVAL must be store or none, got '${v}'` });
    return z.NEVER;
  }),
  ECPDS_RETRIEVAL_CONCURRENCY: integer('ECPDS_RETRIEVAL_CONCURRENCY', 8, 1, 1024),
  ECPDS_ACQUISITION_RUNS: integer('ECPDS_ACQUISITION_RUNS', 8, 0, 1024),
  ECPDS_ACQUISITION_POLL_MS: integer('ECPDS_ACQUISITION_POLL_MS', 5000, 20, 600_000),
  ECPDS_HOST_CHECKS: integer('ECPDS_HOST_CHECKS', 4, 0, 1024),
  ECPDS_HOST_CHECK_POLL_MS: integer('ECPDS_HOST_CHECK_POLL_MS', 5000, 20, 600_000),
  ECPDS_HOST_CHECK_TIMEOUT_MS: integer('ECPDS_HOST_CHECK_TIMEOUT_MS', 60_000, 100, 3_600_000),
  // Checked in functions/store/config.ts, whose messages never repeat a credential.
  ECPDS_STORE_URL: text(),
  // Checked in functions/node/config.ts, whose messages never repeat the URL's password.
  ECPDS_SMTP_URL: text(),
  ECPDS_MAIL_FROM: text(),
  ECPDS_PORTAL_UPLOAD_DIR: text(),
  // Checked in functions/node/config.ts, whose messages never repeat the URL's password.
  ECPDS_MQTT_URL: text(),
  ECPDS_PORTAL_URL: text(),
  ECPDS_PORTAL_REGISTRATIONS_PER_ADDRESS: integer('ECPDS_PORTAL_REGISTRATIONS_PER_ADDRESS', 10, 1, 1_000_000),
  ECPDS_PORTAL_REGISTRATIONS_PER_EMAIL: integer('ECPDS_PORTAL_REGISTRATIONS_PER_EMAIL', 3, 1, 1_000_000),
  ECPDS_PORTAL_SFTP_PORT: integer('ECPDS_PORTAL_SFTP_PORT', 2222, 0, 65535),
  ECPDS_PORTAL_S3_PORT: integer('ECPDS_PORTAL_S3_PORT', 9443, 0, 65535),
  ECPDS_PORTAL_RECHECK_MS: integer('ECPDS_PORTAL_RECHECK_MS', DEFAULT_PORTAL_RECHECK_MS, 100, 600_000),
  // The S3 endpoint's multipart uploads (core/portal/multipart-limits.ts): S3's own bounds at most.
  ECPDS_PORTAL_S3_MAX_PARTS: integer('ECPDS_PORTAL_S3_MAX_PARTS', 10_000, 1, 10_000),
  ECPDS_PORTAL_S3_MAX_PART_MIB: integer('ECPDS_PORTAL_S3_MAX_PART_MIB', 5120, 1, 5120),
  ECPDS_PORTAL_S3_MAX_OPEN_UPLOADS: integer('ECPDS_PORTAL_S3_MAX_OPEN_UPLOADS', 100, 1, 100_000),
  ECPDS_PORTAL_S3_UPLOAD_HOURS: integer('ECPDS_PORTAL_S3_UPLOAD_HOURS', 24, 1, 24 * 365),
  // What a connection not yet in may take (docs/reference.md, ECPDS_HANDSHAKE_TIMEOUT_MS and the rows after it).
  ECPDS_HANDSHAKE_TIMEOUT_MS: integer('ECPDS_HANDSHAKE_TIMEOUT_MS', 10_000, 100, 600_000),
  ECPDS_HEADERS_TIMEOUT_MS: integer('ECPDS_HEADERS_TIMEOUT_MS', 20_000, 100, 600_000),
  ECPDS_MAX_STARTUPS: integer('ECPDS_MAX_STARTUPS', 256, 1, 1_000_000),
  ECPDS_MAX_STARTUPS_PER_ADDRESS: integer('ECPDS_MAX_STARTUPS_PER_ADDRESS', 64, 1, 1_000_000),
  ECPDS_PORTAL_SFTP_LOGIN_TIMEOUT_MS: integer('ECPDS_PORTAL_SFTP_LOGIN_TIMEOUT_MS', 30_000, 100, 600_000),
  ECPDS_PORTAL_SFTP_MAX_STARTUPS: integer('ECPDS_PORTAL_SFTP_MAX_STARTUPS', 100, 1, 1_000_000),
  ECPDS_PORTAL_SFTP_MAX_STARTUPS_PER_ADDRESS: integer('ECPDS_PORTAL_SFTP_MAX_STARTUPS_PER_ADDRESS', 10, 1, 1_000_000),
});

export type SharedEnv = z.output<typeof sharedEnvSchema>;
export type NodeEnv = z.output<typeof nodeEnvSchema>;
export type WorkerEnvConfig = z.output<typeof workerEnvSchema>;
export type EdgeEnvConfig = z.output<typeof edgeEnvSchema>;
export type FetchEnvConfig = z.output<typeof fetchEnvSchema>;

/** Parses `env` with `schema`; every wrong variable is named in one ConfigError, not only the first. */
export function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, unknown>): z.output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const named = (issue: z.core.$ZodIssue) => {
    const variable = String(issue.path[0] ?? '');
    return issue.message.startsWith(variable) ? issue.message : `${variable}: ${issue.message}`;
  };
  throw new ConfigError(result.error.issues.map(named).join('; '));
}
