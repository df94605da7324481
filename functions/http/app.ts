import { Hono, type Context } from 'hono';
import { authenticate, parseBasicAuthorization } from '../../core/api-clients/auth.ts';
import type { Operation, OperationId } from '../../core/catalogue.ts';
import { handlers } from '../../core/handlers.ts';
import { answerBody } from '../../core/destinations/json-text.ts';
import type { Handler } from '../../core/common/handler.ts';
import { parseInput } from '../../core/common/params.ts';
import { contextOf, type Caller, type Logger, type Ports } from '../../core/ports.ts';
import { PRODUCT } from '../../core/system/version.ts';
import { consoleApp, type ConsoleOptions } from '../console/index.ts';
import { parseFormBody, parseJsonBody, readBodyText } from './body.ts';
import { docsRoutes } from './docs.ts';
import { errorResponse, plain } from './errors.ts';
import { createMetrics, otherLabel } from './metrics.ts';
import { opsRoutes } from './ops.ts';
import { honoPath, routesInMatchOrder } from './routes.ts';

export interface AppOptions {
  logger: Logger;
  /** Behind a TLS-terminating proxy: only `X-Forwarded-Proto: https` makes a request secure. */
  trustProxy: boolean;
  maxBodyBytes: number;
  /** The ports of one request; `release` runs after the response (Workers close their db client). */
  portsFor(c: Context): Promise<Ports> | Ports;
  /** The administration console under /console; left out, the app serves the API only. */
  console?: Omit<ConsoleOptions, 'portsFor' | 'clientAddress'>;
  /** /metrics without credentials (ECPDS_METRICS_PUBLIC=1); otherwise it needs the `metrics` permission. */
  metricsPublic?: boolean;
  /**
   * The caller's address, for the failed-authentication limits of the API and the console;
   * `unknown` when the shell cannot tell (failures then count per username only).
   */
  clientAddress(c: Context): string;
}

/** `service` labels the request in /metrics: a permission name, none/basic, or an ops route. */
export type Env = { Variables: { requestId: string; caller: Caller | null; service?: string; ownHeaders?: boolean } };

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Headers of every answer, whoever made it; with a content type, those of an API answer. */
function answerHeaders(requestId: string, contentType?: string): Record<string, string> {
  const common = { 'x-request-id': requestId, 'x-content-type-options': 'nosniff' };
  return contentType ? { 'content-type': contentType, ...common } : common;
}

export function createApp(options: AppOptions) {
  const app = new Hono<Env>();
  const { logger } = options;
  const metrics = createMetrics();

  app.use(async (c, next) => {
    const started = performance.now();
    const answered = metrics.begin();
    const offered = c.req.header('x-request-id');
    const requestId = offered && REQUEST_ID.test(offered) ? offered : crypto.randomUUID();
    c.set('requestId', requestId);
    c.set('caller', null);
    try {
      // Checked here rather than in a middleware of its own: each layer costs every request.
      if (isSecure(c, options.trustProxy)) await next();
      else c.res = plain(403, 'Operation only available through a secure connection (https)');
    } finally {
      answered(c.get('service') ?? otherLabel(c.req.path), c.res.status, (performance.now() - started) / 1000);
    }
    // API answers carry these from the start (see serve); touching c.res.headers would turn
    // their plain header object into a Headers instance, which costs more to send.
    if (!c.get('ownHeaders')) {
      for (const [name, value] of Object.entries(answerHeaders(requestId))) c.res.headers.set(name, value);
    }
    logger.info('request', {
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      ms: Math.round((performance.now() - started) * 10) / 10,
      requestId,
      client: c.get('caller')?.username ?? null,
    });
  });

  const allowed = new Map<string, Set<string>>();
  for (const [id, op] of routesInMatchOrder()) {
    const handler = handlers[id] as Handler<OperationId>;
    const path = honoPath(op.path);
    if (!allowed.has(path)) allowed.set(path, new Set());
    allowed.get(path)!.add(op.method);
    app.on(op.method, path, (c) => serve(c, op, handler, options));
  }
  for (const [path, methods] of allowed) {
    app.all(path, () => plain(405, 'Method not allowed', { Allow: [...methods].join(', ') }));
  }
  opsRoutes(app, options, metrics);
  docsRoutes(app);

  if (options.console) app.route('/console', consoleApp({ ...options.console, portsFor: options.portsFor, clientAddress: options.clientAddress }));

  app.notFound(() => plain(404, 'Not found'));
  app.onError((error, c) => errorResponse(error, c.get('requestId') ?? 'unknown', logger));
  return app;
}

/** Behind a trusted proxy only `X-Forwarded-Proto: https` makes a request secure; otherwise the URL's scheme. */
const isSecure = (c: Context, trustProxy: boolean) =>
  trustProxy
    ? c.req.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase() === 'https'
    : c.req.url.startsWith('https:');

const UNAUTHENTICATED = {
  'WWW-Authenticate': `Basic realm="${PRODUCT}"`,
};

async function serve(c: Context<Env>, op: Operation, handler: Handler<OperationId>, options: AppOptions) {
  c.set('service', op.service ?? op.access);
  const credentials = op.access === 'none' ? null : parseBasicAuthorization(c.req.header('authorization'));
  if (op.access !== 'none' && !credentials) {
    return plain(401, 'Operation only available to registered users', UNAUTHENTICATED);
  }
  // A fresh object on every call: it can take the body and path parameters too.
  const raw: Record<string, unknown> = c.req.query();
  if (op.body) {
    const text = await readBodyText(c.req.raw, options.maxBodyBytes);
    if (op.body === 'json') raw.body = parseJsonBody(text);
    else Object.assign(raw, parseFormBody(c.req.raw, text));
  }
  Object.assign(raw, c.req.param());
  const input = parseInput(op.input, raw);

  const ports = await options.portsFor(c);
  const caller = credentials ? await authenticate(ports, credentials, op.access === 'service' ? op.service : null, options.clientAddress(c)) : null;
  c.set('caller', caller);
  const requestId = c.get('requestId');
  const result = await handler({ ctx: contextOf(ports, requestId, caller), input: input as never });
  // The envelope key first, then the handler's keys (object spreads here cost more than the handler).
  const answer: Record<string, unknown> = op.envelope === 'success' ? { success: 'yes' } : { status: 'ok' };
  for (const key in result) answer[key] = result[key];
  c.set('ownHeaders', true);
  return new Response(answerBody(answer), { status: 200, headers: answerHeaders(requestId, 'application/json') });
}
