import path from 'node:path';
import { ConfigError, nodeEnvSchema, parseEnv } from '../env.ts';

/** Everything the Node shell reads from its environment (functions/env.ts), parsed once at start. */
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
  /** The API's second mount besides the root (ECPDS_BASE_PATH); null serves the root only. */
  basePath: string | null;
}

export { ConfigError } from '../env.ts';

export function parseConfig(env: NodeJS.ProcessEnv, overrides: { propertiesFile?: string } = {}): NodeConfig {
  const e = parseEnv(nodeEnvSchema, env);
  if ((e.TLS_CERT_FILE === null) !== (e.TLS_KEY_FILE === null)) {
    throw new ConfigError('TLS_CERT_FILE and TLS_KEY_FILE must be given together');
  }
  return {
    host: e.HOST,
    port: e.PORT,
    dataDir: path.resolve(e.ECPDS_DATA_DIR),
    databaseUrl: e.DATABASE_URL,
    secretKey: e.ECPDS_SECRET_KEY,
    tlsCertFile: e.TLS_CERT_FILE,
    tlsKeyFile: e.TLS_KEY_FILE,
    trustProxy: e.ECPDS_TRUST_PROXY,
    propertiesFile: overrides.propertiesFile ?? e.ECPDS_PROPERTIES,
    demo: e.ECPDS_DEMO,
    sourceRoots: e.ECPDS_SOURCE_ROOTS.map((p) => path.resolve(p)),
    sourceHosts: e.ECPDS_SOURCE_HOSTS,
    sourceTimeoutMs: e.ECPDS_SOURCE_TIMEOUT_MS,
    eventLog: e.ECPDS_EVENT_LOG,
    sweepSeconds: e.ECPDS_SWEEP_SECONDS,
    metricsPublic: e.ECPDS_METRICS_PUBLIC,
    basePath: e.ECPDS_BASE_PATH,
    notesUrl: e.ECPDS_NOTES_URL,
    notesToken: e.ECPDS_NOTES_TOKEN,
    maxBodyBytes: e.ECPDS_MAX_BODY_BYTES,
  };
}
