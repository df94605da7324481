import { randomBytes } from 'node:crypto';
import type { Context } from 'hono';
import * as apiClients from '../../core/api-clients/clients.ts';
import { SecretBox } from '../../core/common/crypto.ts';
import type { TransferMethods } from '../../core/dissemination/methods.ts';
import type { MultipartLimits } from '../../core/portal/multipart-limits.ts';
import type { RegistrationLimits } from '../../core/portal/registration-rules.ts';
import type { Logger, Mailer } from '../../core/ports.ts';
import { sourceHostOpener } from '../../core/retrieval/source-host.ts';
import type { ObjectStore } from '../../core/store/ports.ts';
import type { DbHandle } from '../../db/client.ts';
import { destinations } from '../../db/schema.ts';
import { createApp } from '../../functions/http/app.ts';
import { nodeUploadStore } from '../../functions/node/portal-uploads.ts';
import { nodeSourceProber, nodeSourceReader } from '../../functions/node/sources.ts';
import type { PortalOptions } from '../../functions/portal/index.ts';
import type { ProcessStateOptions } from '../../functions/ports.ts';
import { backgroundWork, createPorts, createProcessState } from '../../functions/ports.ts';
import { freshDatabase } from './database.ts';
import { type Reply, readReply } from './reply.ts';

export interface CallOptions {
  auth?: string | null;
  body?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
  scheme?: 'https' | 'http';
}

export { type Reply, readReply } from './reply.ts';

export const basic = (username: string, secret: string) =>
  `Basic ${Buffer.from(`${username}:${secret}`).toString('base64')}`;

/** The whole app on a fresh database, driven through `app.request()`. */
export interface HarnessOptions {
  trustProxy?: boolean;
  maxBodyBytes?: number;
  /** Local directories data-file sources may come from. */
  sourceRoots?: string[];
  /** Hosts (or host:port) http(s) data-file sources may come from. */
  sourceHosts?: string[];
  /** /metrics without credentials (ECPDS_METRICS_PUBLIC=1). */
  metricsPublic?: boolean;
  /** The API's mount besides the root (ECPDS_BASE_PATH); `/ecpds` when left out, null for the root only. */
  basePath?: string | null;
  /** Failed-authentication rules and the delay of wrong answers (the production ones when left out). */
  failedAuth?: ProcessStateOptions;
  /** Sends the portal's mail (ECPDS_SMTP_URL); none when left out. */
  mailer?: Mailer | null;
  /**
   * The portal's pages: `origin` for the links they mail (`https://localhost` when left out; null:
   * none configured) and the registration limits (the production ones when left out).
   */
  portalPages?: boolean | { origin?: string | null; registrationLimits?: RegistrationLimits };
  /** Where the portal keeps uploads (a source root too); left out, the portal takes none. */
  portalUploadDir?: string;
  /** The S3 multipart uploads' limits of the portal's upload store (the defaults when left out). */
  portalMultipartLimits?: MultipartLimits;
  /** The portal's S3 domain for virtual-host style (ECPDS_PORTAL_S3_DOMAIN). */
  portalS3Domain?: string;
  /** Who a portal request's browser session is (functions/portal/options.ts). */
  portalSession?: PortalOptions['sessionIdentity'];
  /** A database of the test's own (closed by `close`), such as the one server processes will use. */
  database?: DbHandle;
  /** Called where the server wakes its movers and WIS2 publisher (after a put, a delete, a sweep). */
  wakeMovers?: () => void;
  /** The secret key, when processes started on the same database must read what the harness sealed. */
  secretKey?: Uint8Array;
  /** Where puts are retrieved to before they are sent; left out, sources are read at each send. */
  store?: ObjectStore;
  /** The methods that read paths on destinations' Source hosts at put; left out, puts ignore Source hosts. */
  sourceHostMethods?: TransferMethods;
}

export async function createHarness(options: HarnessOptions = {}) {
  const handle = options.database ?? (await freshDatabase());
  const logLines: string[] = [];
  const log =
    (level: string) =>
    (msg: string, fields: Record<string, unknown> = {}) =>
      void logLines.push(JSON.stringify({ level, msg, ...fields }));
  const logger: Logger = { info: log('info'), warn: log('warn'), error: log('error') };
  const background = backgroundWork(logger);
  const events: string[] = [];
  const sourceRoots = [...(options.sourceRoots ?? []), ...(options.portalUploadDir ? [options.portalUploadDir] : [])];
  const ports = createPorts({
    db: handle.db,
    state: createProcessState(options.failedAuth),
    secrets: new SecretBox(options.secretKey ?? new Uint8Array(randomBytes(32))),
    logger,
    events: { write: (entry) => void events.push(entry) },
    sources: nodeSourceProber({ roots: sourceRoots, hosts: options.sourceHosts ?? [], timeoutMs: 2000 }),
    waitUntil: background.waitUntil,
    mailer: options.mailer ?? null,
    wakeMovers: options.wakeMovers,
    store: options.store ?? null,
    sourceHosts: options.sourceHostMethods
      ? (ports) => sourceHostOpener(ports, ports.repos.retrieval, options.sourceHostMethods!)
      : null,
  });
  const clientAddress = (c: Context) => c.req.header('x-test-address') ?? 'test';
  const pages = typeof options.portalPages === 'object' ? options.portalPages : {};
  const app = createApp({
    logger,
    trustProxy: options.trustProxy ?? false,
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    portsFor: () => ports,
    metricsPublic: options.metricsPublic,
    basePath: options.basePath === undefined ? '/ecpds' : options.basePath,
    clientAddress,
    console: { cookieSecret: ports.secrets.derive('console-cookie') },
    portal: {
      serverName: 'test',
      sources: nodeSourceReader({ roots: sourceRoots, hosts: options.sourceHosts ?? [] }),
      uploads: options.portalUploadDir ? nodeUploadStore(options.portalUploadDir, options.portalMultipartLimits) : null,
      sessionIdentity: options.portalSession,
      s3Domain: options.portalS3Domain ?? null,
      cookieSecret: ports.secrets.derive('portal-cookie'),
      origin: pages.origin === undefined ? 'https://localhost' : pages.origin,
      registrationLimits: pages.registrationLimits,
    },
  });

  async function call(method: string, path: string, opts: CallOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.auth) headers.authorization = opts.auth;
    let body: string | undefined;
    if (opts.form) {
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
      body = new URLSearchParams(opts.form).toString();
    } else if (opts.body !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    }
    return readReply(await app.request(`${opts.scheme ?? 'https'}://localhost${path}`, { method, headers, body }));
  }

  /** Creates an API client with these permission expressions; returns its Authorization value. */
  async function client(username: string, permissions: string[]) {
    const { secret } = await apiClients.create(ports, 'test', { username, permissions, origin: 'cli' });
    return basic(username, secret);
  }

  async function addDestination(name: string) {
    await handle.db.insert(destinations).values({ name, countryIso: 'gb', type: 1 }).onConflictDoNothing();
  }

  return {
    app,
    handle,
    db: handle.db,
    ports,
    logLines,
    events,
    call,
    client,
    addDestination,
    settle: () => background.settled(),
    close: async () => {
      await background.settled();
      await handle.close();
    },
  };
}

export type Harness = Awaited<ReturnType<typeof createHarness>>;
