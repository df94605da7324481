import os from 'node:os';
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
  /** Where local data-file sources may come from; the portal's upload directory is one of them. */
  sourceRoots: string[];
  sourceHosts: string[];
  sourceTimeoutMs: number;
  eventLog: string | null;
  sweepSeconds: number;
  /** /metrics answers without credentials (otherwise it needs the `metrics` permission). */
  metricsPublic: boolean;
  /** The API's second mount besides the root (ECPDS_BASE_PATH); null serves the root only. */
  basePath: string | null;
  mover: MoverConfig;
  portal: PortalConfig;
}

/** The data portal's settings on Node. */
export interface PortalConfig {
  /** Where uploaded files are stored (a source root, so that they can be read and sent). */
  uploadDir: string;
}

/** The data mover a server embeds (unless `enabled` is false) and `ecpds-edge mover` runs. */
export interface MoverConfig {
  enabled: boolean;
  name: string;
  concurrency: number;
  leaseMs: number;
  heartbeatMs: number;
  pollMs: number;
  drainMs: number;
  /** Directories under which `file` hosts may deliver. */
  fileRoots: string[];
}

export { ConfigError } from '../env.ts';

export function parseConfig(env: NodeJS.ProcessEnv, overrides: { propertiesFile?: string } = {}): NodeConfig {
  const e = parseEnv(nodeEnvSchema, env);
  if ((e.TLS_CERT_FILE === null) !== (e.TLS_KEY_FILE === null)) {
    throw new ConfigError('TLS_CERT_FILE and TLS_KEY_FILE must be given together');
  }
  const uploadDir = path.resolve(e.ECPDS_PORTAL_UPLOAD_DIR ?? path.join(e.ECPDS_DATA_DIR, 'portal-uploads'));
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
    // Unset: the data directory's `outgoing`, so that a fresh install can put (and deliver) a file.
    // The portal's uploads are sources too, wherever they are kept.
    sourceRoots: [
      ...new Set(
        [
          ...(e.ECPDS_SOURCE_ROOTS.length > 0 ? e.ECPDS_SOURCE_ROOTS : [path.join(e.ECPDS_DATA_DIR, 'outgoing')]),
          uploadDir,
        ].map((p) => path.resolve(p)),
      ),
    ],
    sourceHosts: e.ECPDS_SOURCE_HOSTS,
    sourceTimeoutMs: e.ECPDS_SOURCE_TIMEOUT_MS,
    eventLog: e.ECPDS_EVENT_LOG,
    sweepSeconds: e.ECPDS_SWEEP_SECONDS,
    metricsPublic: e.ECPDS_METRICS_PUBLIC,
    basePath: e.ECPDS_BASE_PATH,
    notesUrl: e.ECPDS_NOTES_URL,
    notesToken: e.ECPDS_NOTES_TOKEN,
    maxBodyBytes: e.ECPDS_MAX_BODY_BYTES,
    mover: {
      enabled: e.ECPDS_MOVER,
      name: e.ECPDS_MOVER_NAME ?? `${os.hostname()}-${process.pid}`,
      concurrency: e.ECPDS_MOVER_CONCURRENCY,
      leaseMs: e.ECPDS_MOVER_LEASE_SECONDS * 1000,
      heartbeatMs: Math.min(e.ECPDS_MOVER_HEARTBEAT_SECONDS, e.ECPDS_MOVER_LEASE_SECONDS / 2) * 1000,
      pollMs: e.ECPDS_MOVER_POLL_MS,
      drainMs: e.ECPDS_MOVER_DRAIN_SECONDS * 1000,
      fileRoots: (e.ECPDS_FILE_HOST_ROOTS.length > 0
        ? e.ECPDS_FILE_HOST_ROOTS
        : [path.join(e.ECPDS_DATA_DIR, 'delivered')]
      ).map((p) => path.resolve(p)),
    },
    portal: { uploadDir },
  };
}
