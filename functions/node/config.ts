import path from 'node:path';

/** Everything the Node shell reads from its environment, parsed once at start. */
export interface NodeConfig {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl: string | null;
  secretKey: string | null;
  tlsCertFile: string | null;
  tlsKeyFile: string | null;
  trustProxy: boolean;
  propertiesFile: string | null;
  demo: boolean;
  maxBodyBytes: number;
  notesUrl: string | null;
  notesToken: string | null;
  sourceRoots: string[];
  sourceHosts: string[];
  sourceTimeoutMs: number;
  eventLog: string | null;
  sweepSeconds: number;
  /** /metrics answers without credentials (otherwise it needs the `metrics` permission). */
  metricsPublic: boolean;
}

export class ConfigError extends Error {}

const flag = (value: string | undefined, fallback: boolean) => {
  if (value === undefined || value === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(value)) return true;
  if (/^(0|false|no|off)$/i.test(value)) return false;
  throw new ConfigError(`expected 1/0 or true/false, got '${value}'`);
};

function integer(name: string, value: string | undefined, fallback: number, min: number, max: number) {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got '${value}'`);
  return n;
}

const list = (v: string | undefined, separator: RegExp) =>
  (v ?? '').split(separator).map((s) => s.trim()).filter((s) => s !== '');

const orNull = (v: string | undefined) => (v === undefined || v === '' ? null : v);

export function parseConfig(env: NodeJS.ProcessEnv, overrides: { propertiesFile?: string } = {}): NodeConfig {
  const tlsCertFile = orNull(env.TLS_CERT_FILE);
  const tlsKeyFile = orNull(env.TLS_KEY_FILE);
  if ((tlsCertFile === null) !== (tlsKeyFile === null)) {
    throw new ConfigError('TLS_CERT_FILE and TLS_KEY_FILE must be given together');
  }
  return {
    host: env.HOST || '127.0.0.1',
    port: integer('PORT', env.PORT, 8443, 0, 65535),
    dataDir: path.resolve(env.ECPDS_DATA_DIR || './data'),
    databaseUrl: orNull(env.DATABASE_URL),
    secretKey: orNull(env.ECPDS_SECRET_KEY),
    tlsCertFile,
    tlsKeyFile,
    trustProxy: flag(env.ECPDS_TRUST_PROXY, false),
    propertiesFile: overrides.propertiesFile ?? orNull(env.ECPDS_PROPERTIES),
    demo: flag(env.ECPDS_DEMO, true),
    sourceRoots: list(env.ECPDS_SOURCE_ROOTS, /[,:]/).map((p) => path.resolve(p)),
    sourceHosts: list(env.ECPDS_SOURCE_HOSTS, /,/),
    sourceTimeoutMs: integer('ECPDS_SOURCE_TIMEOUT_MS', env.ECPDS_SOURCE_TIMEOUT_MS, 10_000, 100, 600_000),
    eventLog: orNull(env.ECPDS_EVENT_LOG),
    sweepSeconds: integer('ECPDS_SWEEP_SECONDS', env.ECPDS_SWEEP_SECONDS, 60, 0, 86_400),
    metricsPublic: flag(env.ECPDS_METRICS_PUBLIC, false),
    notesUrl: orNull(env.ECPDS_NOTES_URL),
    notesToken: orNull(env.ECPDS_NOTES_TOKEN),
    maxBodyBytes: integer('ECPDS_MAX_BODY_BYTES', env.ECPDS_MAX_BODY_BYTES, 10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  };
}
