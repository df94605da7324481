import os from 'node:os';
import path from 'node:path';
import type { MultipartLimits } from '../../core/portal/multipart-limits.ts';
import { REGISTRATION_LIMITS, type RegistrationLimits } from '../../core/portal/registration-rules.ts';
import type { RetentionLimits } from '../../core/retention/purge.ts';
import { assertTlsPair, ConfigError, nodeEnvSchema, parseEnv } from '../env.ts';
import { parseStoreConfig, type StoreConfig } from '../store/config.ts';

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
  /** What a connection may take before its request is read (ECPDS_HANDSHAKE_TIMEOUT_MS, ECPDS_HEADERS_TIMEOUT_MS). */
  timeouts: ConnectionTimeouts;
  /** Connections to the HTTPS port without their first request yet, at most, in all and from one address. */
  maxStartups: { total: number; perAddress: number };
  notesUrl: string | null;
  notesToken: string | null;
  /** Where local data-file sources may come from; the portal's upload directory is one of them. */
  sourceRoots: string[];
  sourceHosts: string[];
  sourceTimeoutMs: number;
  eventLog: string | null;
  sweepSeconds: number;
  /** What the sweep keeps of ended transfers (ECPDS_MAX_TRANSFER_LIFE_DAYS, ECPDS_MAX_IDENTITY_COUNT). */
  retention: RetentionLimits;
  /** /metrics answers without credentials (otherwise it needs the `metrics` permission). */
  metricsPublic: boolean;
  /** The API's second mount besides the root (ECPDS_BASE_PATH); null serves the root only. */
  basePath: string | null;
  mover: MoverConfig;
  /**
   * Whether files are retrieved into the store before they are sent (ECPDS_RETRIEVAL), how many at
   * once per mover, and where the local store keeps them (`<data dir>/store` by default).
   */
  retrieval: { enabled: boolean; concurrency: number; store: StoreConfig };
  /** Acquisition hosts listed at once over every mover (0: none here), and how often due ones are looked for. */
  acquisition: { runs: number; pollMs: number };
  /** Host checks at once over every server (0: none here), how often due hosts are looked for, each one's limit. */
  hostChecks: { concurrency: number; pollMs: number; timeoutMs: number };
  /** The SMTP server of the portal's e-mails; null: none, and self-service registration is unavailable. */
  mail: MailConfig | null;
  portal: PortalConfig;
  /** WIS2 notifications of the portal's files; null (ECPDS_MQTT_URL unset): none are published. */
  wis2: Wis2Config | null;
}

/** ECPDS_MQTT_URL and ECPDS_PORTAL_URL, checked. The URL may hold a password: never logged whole. */
export interface Wis2Config {
  mqttUrl: string;
  /** The broker as logs may show it: scheme, host and port. */
  broker: string;
  /** The portal's public address, without the trailing '/'; null: the server's own https URL. */
  portalUrl: string | null;
}

/** ECPDS_SMTP_URL and ECPDS_MAIL_FROM, checked. The password is kept for the mailer only: never logged. */
export interface MailConfig {
  host: string;
  /** Null: the scheme's usual port (587 for smtp, 465 for smtps). */
  port: number | null;
  /** `smtps`: TLS from the first byte; `smtp`: STARTTLS when the server offers it. */
  secure: boolean;
  user: string | null;
  password: string | null;
  /** Refuse to send without TLS: a password for a server beyond this host never goes in clear. */
  requireTLS: boolean;
  /** The From of every mail: `address` or `Name <address>`. */
  from: string;
}

/** The data portal's settings on Node. */
export interface PortalConfig {
  /** Where uploaded files are stored (a source root, so that they can be read and sent). */
  uploadDir: string;
  /** The S3 endpoint's domain for virtual-host style (ECPDS_PORTAL_S3_DOMAIN); null: path style only. */
  s3Domain: string | null;
  /** The port of the portal's SFTP server, on the same address as HTTPS; null: no SFTP server. */
  sftpPort: number | null;
  /** The port of the portal's S3 listener (S3 at its root), on the address of HTTPS; null: none. */
  s3Port: number | null;
  /** The portal's public address (ECPDS_PORTAL_URL), without the trailing '/'; null: not configured. */
  publicUrl: string | null;
  /** Registrations mailed per client address (an hour) and per e-mail (a day). */
  registrationLimits: RegistrationLimits;
  /** How long an SFTP session goes on its last check of the user (ECPDS_PORTAL_RECHECK_MS). */
  recheckMs: number;
  /** The S3 endpoint's multipart uploads: parts, their size, uploads open per user, how long one stays open. */
  multipart: MultipartLimits;
  /** A connection to the SFTP server not logged in by then is closed (OpenSSH's LoginGraceTime). */
  sftpLoginTimeoutMs: number;
  /** Connections to the SFTP server not logged in yet, at most, in all and from one address (OpenSSH's MaxStartups). */
  sftpMaxStartups: { total: number; perAddress: number };
}

/** How long the HTTPS port waits for a connection to get to its request. */
export interface ConnectionTimeouts {
  /** For the first byte, then for the TLS handshake to end. */
  handshakeMs: number;
  /** For a request's headers, whole, from the connection's start (or the end of the request before). */
  headersMs: number;
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

/** The store's configuration, the local one resolved to its directory (`<data dir>/store` by default). */
function storeConfigIn(env: NodeJS.ProcessEnv, dataDir: string): StoreConfig {
  const store = parseStoreConfig(env);
  return store.kind === 'directory'
    ? { kind: 'directory', path: path.resolve(store.path ?? path.join(dataDir, 'store')) }
    : store;
}

export function parseConfig(env: NodeJS.ProcessEnv, overrides: { propertiesFile?: string } = {}): NodeConfig {
  const e = parseEnv(nodeEnvSchema, env);
  assertTlsPair(e);
  const uploadDir = path.resolve(e.ECPDS_PORTAL_UPLOAD_DIR ?? path.join(e.ECPDS_DATA_DIR, 'portal-uploads'));
  const mail = parseMail(e.ECPDS_SMTP_URL, e.ECPDS_MAIL_FROM);
  const publicUrl = e.ECPDS_PORTAL_URL === null ? null : parsePortalUrl(e.ECPDS_PORTAL_URL);
  // Mail turns self-service registration on; its links must lead to the portal, whatever Host a request names.
  if (mail !== null && publicUrl === null) {
    throw new ConfigError(
      "ECPDS_SMTP_URL turns on the portal's self-service registration, whose mails link to the portal: " +
        'set ECPDS_PORTAL_URL to the address users reach it at, e.g. https://data.example.org',
    );
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
    retention: {
      maxTransferLifeDays: e.ECPDS_MAX_TRANSFER_LIFE_DAYS,
      maxIdentityCount: e.ECPDS_MAX_IDENTITY_COUNT,
      batchSize: e.ECPDS_PURGE_BATCH,
    },
    metricsPublic: e.ECPDS_METRICS_PUBLIC,
    basePath: e.ECPDS_BASE_PATH,
    notesUrl: e.ECPDS_NOTES_URL,
    notesToken: e.ECPDS_NOTES_TOKEN,
    maxBodyBytes: e.ECPDS_MAX_BODY_BYTES,
    timeouts: { handshakeMs: e.ECPDS_HANDSHAKE_TIMEOUT_MS, headersMs: e.ECPDS_HEADERS_TIMEOUT_MS },
    maxStartups: { total: e.ECPDS_MAX_STARTUPS, perAddress: e.ECPDS_MAX_STARTUPS_PER_ADDRESS },
    mail,
    retrieval: {
      enabled: e.ECPDS_RETRIEVAL === 'store',
      concurrency: e.ECPDS_RETRIEVAL_CONCURRENCY,
      store: storeConfigIn(env, e.ECPDS_DATA_DIR),
    },
    acquisition: { runs: e.ECPDS_ACQUISITION_RUNS, pollMs: e.ECPDS_ACQUISITION_POLL_MS },
    hostChecks: {
      concurrency: e.ECPDS_HOST_CHECKS,
      pollMs: e.ECPDS_HOST_CHECK_POLL_MS,
      timeoutMs: e.ECPDS_HOST_CHECK_TIMEOUT_MS,
    },
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
    portal: {
      uploadDir,
      s3Domain: e.ECPDS_PORTAL_S3_DOMAIN,
      sftpPort: e.ECPDS_PORTAL_SFTP_PORT === 0 ? null : e.ECPDS_PORTAL_SFTP_PORT,
      s3Port: e.ECPDS_PORTAL_S3_PORT === 0 ? null : e.ECPDS_PORTAL_S3_PORT,
      publicUrl,
      registrationLimits: {
        ...REGISTRATION_LIMITS,
        perAddress: e.ECPDS_PORTAL_REGISTRATIONS_PER_ADDRESS,
        perEmail: e.ECPDS_PORTAL_REGISTRATIONS_PER_EMAIL,
      },
      recheckMs: e.ECPDS_PORTAL_RECHECK_MS,
      multipart: {
        maxParts: e.ECPDS_PORTAL_S3_MAX_PARTS,
        maxPartBytes: e.ECPDS_PORTAL_S3_MAX_PART_MIB * 1024 * 1024,
        maxOpenUploads: e.ECPDS_PORTAL_S3_MAX_OPEN_UPLOADS,
        staleAfterMs: e.ECPDS_PORTAL_S3_UPLOAD_HOURS * 3600_000,
      },
      sftpLoginTimeoutMs: e.ECPDS_PORTAL_SFTP_LOGIN_TIMEOUT_MS,
      sftpMaxStartups: {
        total: e.ECPDS_PORTAL_SFTP_MAX_STARTUPS,
        perAddress: e.ECPDS_PORTAL_SFTP_MAX_STARTUPS_PER_ADDRESS,
      },
    },
    wis2: parseWis2(e.ECPDS_MQTT_URL, e.ECPDS_PORTAL_URL),
  };
}

const MQTT_URL_SHAPE =
  'ECPDS_MQTT_URL must be mqtt://[user:password@]host[:port] or mqtts://[user:password@]host[:port]';

/** Reads the WIS2 settings; no message repeats the MQTT URL, which may hold a password. */
export function parseWis2(mqttUrl: string | null, portalUrl: string | null): Wis2Config | null {
  const portal = portalUrl === null ? null : parsePortalUrl(portalUrl);
  if (mqttUrl === null) return null;
  let parsed: URL;
  try {
    parsed = new URL(mqttUrl);
  } catch {
    throw new ConfigError(`${MQTT_URL_SHAPE}; the value given is not a URL`);
  }
  if (parsed.protocol !== 'mqtt:' && parsed.protocol !== 'mqtts:') {
    throw new ConfigError(`${MQTT_URL_SHAPE}; got the scheme '${parsed.protocol.slice(0, 20)}'`);
  }
  if (parsed.hostname === '') throw new ConfigError(`${MQTT_URL_SHAPE}; it names no host`);
  if ((parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search !== '' || parsed.hash !== '') {
    throw new ConfigError(`${MQTT_URL_SHAPE}; it takes no path, query or fragment`);
  }
  try {
    decodeURIComponent(parsed.username);
    decodeURIComponent(parsed.password);
  } catch {
    throw new ConfigError(`${MQTT_URL_SHAPE}; its user or password holds a malformed %-escape`);
  }
  if (parsed.username === '' && parsed.password !== '') {
    throw new ConfigError(`${MQTT_URL_SHAPE}; it has a password but no user`);
  }
  const port = parsed.port === '' ? (parsed.protocol === 'mqtts:' ? '8883' : '1883') : parsed.port;
  return { mqttUrl, broker: `${parsed.protocol}//${parsed.host.replace(/:\d+$/, '')}:${port}`, portalUrl: portal };
}

function parsePortalUrl(text: string): string {
  const shape = 'ECPDS_PORTAL_URL must be the https:// address the portal is reached at, e.g. https://data.example.org';
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new ConfigError(`${shape}; got '${text.slice(0, 200)}'`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new ConfigError(`${shape}; got the scheme '${parsed.protocol.slice(0, 20)}'`);
  }
  if (parsed.username !== '' || parsed.password !== '' || parsed.search !== '' || parsed.hash !== '') {
    throw new ConfigError(`${shape}; it takes no credentials, query or fragment`);
  }
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`;
}

const SMTP_URL_SHAPE =
  'ECPDS_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://[user:password@]host[:port]';

/** Reads the mail settings; no message repeats the URL, which may hold a password. */
export function parseMail(url: string | null, from: string | null): MailConfig | null {
  if (url === null && from === null) return null;
  if (url === null)
    throw new ConfigError('ECPDS_MAIL_FROM is set without ECPDS_SMTP_URL: both are needed to send mail');
  if (from === null)
    throw new ConfigError("ECPDS_SMTP_URL needs ECPDS_MAIL_FROM, the address the portal's mail is from");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`${SMTP_URL_SHAPE}; the value given is not a URL`);
  }
  if (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:') {
    throw new ConfigError(`${SMTP_URL_SHAPE}; got the scheme '${parsed.protocol.slice(0, 20)}'`);
  }
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw new ConfigError(`${SMTP_URL_SHAPE}; it names no host`);
  if ((parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search !== '' || parsed.hash !== '') {
    throw new ConfigError(`${SMTP_URL_SHAPE}; it takes no path, query or fragment`);
  }
  let user: string | null = null;
  let password: string | null = null;
  try {
    user = parsed.username === '' ? null : decodeURIComponent(parsed.username);
    password = parsed.password === '' ? null : decodeURIComponent(parsed.password);
  } catch {
    throw new ConfigError(`${SMTP_URL_SHAPE}; its user or password holds a malformed %-escape`);
  }
  if (user === null && password !== null) throw new ConfigError(`${SMTP_URL_SHAPE}; it has a password but no user`);
  if (!/^(?:[^<>\p{Cc}]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/u.test(from.trim())) {
    throw new ConfigError(
      `ECPDS_MAIL_FROM must be an address or 'Name <address>', got '${from.replace(/\p{Cc}/gu, '?')}'`,
    );
  }
  const secure = parsed.protocol === 'smtps:';
  return {
    host,
    port: parsed.port === '' ? null : Number(parsed.port),
    secure,
    user,
    password,
    requireTLS: !secure && user !== null && !isLoopback(host),
    from: from.trim(),
  };
}

const isLoopback = (host: string) => host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
