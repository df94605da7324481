import type { Context, Handler, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { Logger } from '../../core/ports.ts';
import type { Env } from './app.ts';
import { plain } from './errors.ts';
import { type Metrics, otherLabel } from './metrics.ts';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Gives the request an id (a well-formed one offered by the caller, or a new one) echoed on every answer. */
export const requestId = (): MiddlewareHandler<Env> => async (c, next) => {
  const offered = c.req.header('x-request-id');
  const id = offered && REQUEST_ID.test(offered) ? offered : crypto.randomUUID();
  c.set('requestId', id);
  c.set('caller', null);
  await next();
  // Set on the answer's own headers, as Hono's secureHeaders does: c.header() after next() would rebuild the answer.
  c.res.headers.set('x-request-id', id);
  c.res.headers.set('x-content-type-options', 'nosniff');
};

/** One JSON line per request; never the query string, credentials or a body. */
export const accessLog =
  (logger: Logger): MiddlewareHandler<Env> =>
  async (c, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      logger.info('request', {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        ms: Math.round((performance.now() - started) * 10) / 10,
        requestId: c.get('requestId'),
        client: c.get('caller')?.username ?? null,
      });
    }
  };

/** Counts every answer by service label and status, with its duration. */
export const requestMetrics =
  (metrics: Metrics): MiddlewareHandler<Env> =>
  async (c, next) => {
    const started = performance.now();
    const answered = metrics.begin();
    try {
      await next();
    } finally {
      answered(c.get('service') ?? otherLabel(c.req.path), c.res.status, (performance.now() - started) / 1000);
    }
  };

/** The 403's text, also given by the Node server to plain HTTP on its HTTPS port. */
export const NOT_SECURE = 'Operation only available through a secure connection (https)';

const probes = new WeakSet<Handler<Env>>();

/**
 * Marks a route's handler as a balancer's probe: behind a trusted proxy it answers GET and HEAD over plain
 * HTTP too, as probes are sent to the server directly, without `X-Forwarded-Proto`. Its answer must then say
 * no more than a status (see `isSecure`).
 */
export const probe = (handler: Handler<Env>): Handler<Env> => {
  probes.add(handler);
  return handler;
};

/**
 * Plain HTTP is refused (403); behind a trusted proxy only `X-Forwarded-Proto: https` counts as secure,
 * except for the probes' GET and HEAD.
 */
export const secureOnly =
  (trustProxy: boolean): MiddlewareHandler<Env> =>
  async (c, next) => {
    if (isSecure(c, trustProxy) || (trustProxy && isProbe(c))) return next();
    c.res = plain(403, NOT_SECURE);
  };

/**
 * The caller's address: behind a trusted proxy the first X-Forwarded-For hop, else the peer the
 * shell's server saw (`peer`), else `unknown`.
 */
export function clientAddressOf(c: Context, trustProxy: boolean, peer: () => string | undefined): string {
  const forwarded = trustProxy ? c.req.header('x-forwarded-for')?.split(',')[0]?.trim() : undefined;
  return forwarded || peer() || 'unknown';
}

/** Whether the request came over HTTPS (behind a trusted proxy: as the proxy says). */
export const isSecure = (c: Context, trustProxy: boolean) =>
  trustProxy
    ? c.req.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase() === 'https'
    : c.req.url.startsWith('https:');

// The route that answers decides, not the path: a probe is the same route at the root and under the
// base path, and nothing else answers at a probe's path before it. Middleware is registered for ALL methods.
const isProbe = (c: Context) => {
  if (c.req.method !== 'GET' && c.req.method !== 'HEAD') return false;
  const answering = matchedRoutes(c).find((r) => r.method !== 'ALL');
  return answering !== undefined && probes.has(answering.handler as Handler<Env>);
};

const FRAME_ANCESTORS = "frame-ancestors 'none'";

/** A page's policy with framing refused: its own frame-ancestors (if any) replaced in place, the rest kept. */
export function withFramingRefused(policy: string | null): string {
  const directives = (policy ?? '')
    .split(';')
    .map((d) => d.trim())
    .filter((d) => d !== '');
  const framing = (d: string) => /^frame-ancestors(\s|$)/i.test(d);
  if (!directives.some(framing)) return [...directives, FRAME_ANCESTORS].join('; ');
  const kept = directives.filter((d, i) => !framing(d) || directives.findIndex(framing) === i);
  return kept.map((d) => (framing(d) ? FRAME_ANCESTORS : d)).join('; ');
}

/**
 * Every HTML answer (the console's and the portal's pages, listings, error pages) refuses to be
 * framed, the one place this is decided: a page with a form inside another site's frame can be
 * clicked through unseen. Other answers (files, JSON, S3's XML) are left as they are.
 */
export const framingRefused = (): MiddlewareHandler<Env> => async (c, next) => {
  await next();
  if (!/^\s*text\/html\b/i.test(c.res.headers.get('content-type') ?? '')) return;
  c.res.headers.set('content-security-policy', withFramingRefused(c.res.headers.get('content-security-policy')));
  c.res.headers.set('x-frame-options', 'DENY');
};
