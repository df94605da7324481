import { type Context, Hono } from 'hono';
import { authenticate, parseBasicAuthorization } from '../../core/api-clients/auth.ts';
import type { Operation, OperationId } from '../../core/catalogue.ts';
import { type Handler, SerializedAnswer } from '../../core/common/operation.ts';
import { parseInput } from '../../core/common/params.ts';
import type { EngineStats } from '../../core/dissemination/stats.ts';
import { handlers } from '../../core/handlers.ts';
import type { Caller, Logger, Ports } from '../../core/ports.ts';
import { PRODUCT } from '../../core/system/version.ts';
import { type ConsoleOptions, consoleApp } from '../console/index.ts';
import { type PortalOptions, portalApp } from '../portal/index.ts';
import { portalFallback } from '../portal/not-found.tsx';
import { type PortalPagesOptions, portalPages } from '../portal/pages/index.ts';
import { portalSessionIdentity } from '../portal/session.ts';
import { parseFormBody, parseJsonBody, readBodyText } from './body.ts';
import { type DocsMounts, docsRoutes } from './docs.ts';
import { errorResponse, plain } from './errors.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { accessLog, framingRefused, requestId, requestMetrics, secureOnly } from './middleware.ts';
import { opsRoutes } from './ops.ts';
import { honoPath, routesInMatchOrder } from './routes.ts';
import { s3ListenerApp } from './s3-listener.ts';

export interface AppOptions {
  logger: Logger;
  /** Behind a TLS-terminating proxy: only `X-Forwarded-Proto: https` makes a request secure. */
  trustProxy: boolean;
  maxBodyBytes: number;
  /** The ports of a request: the same for every request on Node, a database client per request on Workers. */
  portsFor(c: Context): Promise<Ports> | Ports;
  /** The administration console under /console; left out, the app serves the API only. */
  console?: Omit<ConsoleOptions, 'portsFor' | 'clientAddress'>;
  /**
   * The data portal under /portal: its file routes (incoming users' files) and its pages (log in,
   * registration), with one browser session for both; left out, the app serves none.
   */
  portal?: Omit<PortalOptions, 'portsFor' | 'clientAddress'> &
    Pick<PortalPagesOptions, 'cookieSecret' | 'origin' | 'registrationLimits'>;
  /** /metrics without credentials (ECPDS_METRICS_PUBLIC=1); otherwise it needs the `metrics` permission. */
  metricsPublic?: boolean;
  /**
   * A path (such as `/ecpds`, ECPDS_BASE_PATH) that serves the API, /healthz, /metrics and the docs
   * as the root does, for clients written for the reference server's context; null: the root only.
   */
  basePath?: string | null;
  /**
   * The caller's address, for the failed-authentication limits of the API and the console;
   * `unknown` when the shell cannot tell (failures then count per username only).
   */
  clientAddress(c: Context): string;
  /** What this process's mover did, for /metrics; none when it runs no mover. */
  engineStats?: EngineStats;
}

/** `service` labels the request in /metrics: a permission name, none/basic, or an ops route. */
export type Env = { Variables: { requestId: string; caller: Caller | null; service?: string } };

export function createApp(options: AppOptions) {
  const app = new Hono<Env>();
  const metrics = createMetrics();
  app.use(
    requestId(),
    accessLog(options.logger),
    requestMetrics(metrics),
    secureOnly(options.trustProxy),
    framingRefused(),
  );

  const base = options.basePath ?? null;
  // Mounted routes are copied into the app's router with their prefix: no middleware per request.
  app.route('/', apiRoutes(options, metrics, { base, mount: null }));
  if (base !== null) app.route(base, apiRoutes(options, metrics, { base, mount: base }));
  if (options.console) {
    const { portsFor, clientAddress } = options;
    app.route('/console', consoleApp({ ...options.console, portsFor, clientAddress }));
  }
  // The S3 endpoint at the root of a listener of its own (ECPDS_PORTAL_S3_PORT), for the shell to serve.
  let s3: ReturnType<typeof s3ListenerApp> | null = null;
  if (options.portal) {
    const { portsFor, clientAddress } = options;
    const { cookieSecret, origin, registrationLimits, ...files } = options.portal;
    const pages = { portsFor, clientAddress, cookieSecret, origin, registrationLimits };
    const sessionIdentity = files.sessionIdentity ?? portalSessionIdentity(pages);
    app.route('/portal', portalPages(pages, sessionIdentity));
    app.route('/portal', portalApp({ ...files, portsFor, clientAddress, sessionIdentity }));
    const { logger, trustProxy } = options;
    s3 = s3ListenerApp({ ...files, portsFor, clientAddress }, { logger, trustProxy, metrics });
  }

  // Under /portal, a browser's 404 is a page of the portal, and `/portal/` leads to the files.
  app.notFound((c) =>
    options.portal && c.req.path.startsWith('/portal/') ? portalFallback(c) : plain(404, 'Not found'),
  );
  app.onError((error, c) => errorResponse(error, c.get('requestId') ?? 'unknown', options.logger));
  return Object.assign(app, { s3 });
}

/** The catalogue's operations (and 405 for their other methods), /healthz, /metrics and the docs. */
function apiRoutes(options: AppOptions, metrics: Metrics, mounts: DocsMounts) {
  const api = new Hono<Env>();
  const methodsByPath = new Map<string, Set<string>>();
  for (const [id, op] of routesInMatchOrder()) {
    const path = honoPath(op.path);
    methodsByPath.set(path, (methodsByPath.get(path) ?? new Set()).add(op.method));
    api.on(op.method, path, (c) => serve(c, op, handlers[id] as Handler<OperationId>, options));
  }
  for (const [path, methods] of methodsByPath) {
    api.all(path, () => plain(405, 'Method not allowed', { Allow: [...methods].join(', ') }));
  }
  opsRoutes(api, options, metrics);
  docsRoutes(api, mounts);
  return api;
}

const UNAUTHENTICATED = { 'WWW-Authenticate': `Basic realm="${PRODUCT}"` };

/** One catalogue operation: the wire's order of checks (401, 412, 400, then credentials), the handler, the envelope. */
async function serve(c: Context<Env>, op: Operation, handler: Handler<OperationId>, options: AppOptions) {
  c.set('service', op.service ?? op.access);
  const credentials = op.access === 'none' ? null : parseBasicAuthorization(c.req.header('authorization'));
  if (op.access !== 'none' && !credentials) {
    return plain(401, 'Operation only available to registered users', UNAUTHENTICATED);
  }
  const input = parseInput(op.input, await rawInput(c, op, options.maxBodyBytes));

  const ports = await options.portsFor(c);
  const permission = op.access === 'service' ? op.service : null;
  const caller = credentials ? await authenticate(ports, credentials, permission, options.clientAddress(c)) : null;
  c.set('caller', caller);
  const result = await handler({ ctx: { ports, caller, requestId: c.get('requestId') }, input: input as never });
  const headers = { 'content-type': 'application/json' };
  // Bytes made by TextEncoder, always backed by a plain ArrayBuffer.
  if (result instanceof SerializedAnswer) return c.body(result.body as Uint8Array<ArrayBuffer>, 200, headers);
  return c.body(JSON.stringify(envelope(op, result)), 200, headers);
}

/** Query, body and path parameters, in that order of precedence from the last. */
async function rawInput(c: Context<Env>, op: Operation, maxBodyBytes: number): Promise<Record<string, unknown>> {
  const raw: Record<string, unknown> = c.req.query();
  if (op.body) {
    const text = await readBodyText(c.req.raw, maxBodyBytes);
    if (op.body === 'json') raw.body = parseJsonBody(text);
    else Object.assign(raw, parseFormBody(c.req.raw, text));
  }
  return Object.assign(raw, c.req.param());
}

const envelope = (op: Operation, result: object) =>
  op.envelope === 'success' ? { success: 'yes', ...result } : { status: 'ok', ...result };
