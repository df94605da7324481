import type { Hono } from 'hono';
import { authenticate, parseBasicAuthorization } from '../../core/api-clients/auth.ts';
import { messageOf } from '../../core/common/errors.ts';
import { storeHealth } from '../../core/store/health.ts';
import { PRODUCT } from '../../core/system/version.ts';
import { renderAcquisition, renderGlobalCache } from './acquisition-metrics.ts';
import { renderAlertFigures, renderReachability } from './alert-metrics.ts';
import type { AppOptions, Env } from './app.ts';
import { plain } from './errors.ts';
import { renderHostChecks } from './host-check-metrics.ts';
import { renderMailOutbox } from './mail-metrics.ts';
import { type Metrics, renderEngine } from './metrics.ts';
import { isSecure, probe } from './middleware.ts';
import { renderRetention, renderStore } from './retention-metrics.ts';

/** The permission /metrics asks for, matched like a service name (so `.*` grants it). */
export const METRICS_PERMISSION = 'metrics';
// A database that does not answer at all must still give the probe an answer.
const PING_TIMEOUT_MS = 5000;
const UNAVAILABLE = { status: 'error', message: 'Service unavailable: database unreachable' };

/**
 * /healthz, /readyz and /metrics: outside /v1, behind the same HTTPS rule as everything else, except the
 * probes' over plain HTTP behind a trusted proxy, which then answer their status only.
 */
export function opsRoutes(app: Hono<Env>, options: AppOptions, metrics: Metrics) {
  app.get(
    '/healthz',
    probe(async (c) => {
      c.set('service', 'healthz');
      // Over plain HTTP, anyone on the way may read the answer: the store's whereabouts and errors stay out.
      const full = isSecure(c, options.trustProxy);
      try {
        const ports = await options.portsFor(c);
        const [store] = await Promise.all([
          ports.store ? storeHealth(ports.store) : null,
          withTimeout(ports.repos.ping(), PING_TIMEOUT_MS),
        ]);
        if (!store) return c.json({ status: 'ok' });
        if (store.status === 'failing') {
          options.logger.warn('store check failed', { requestId: c.get('requestId'), reason: store.reason });
        }
        // Still 200 with the store failing: puts are accepted and kept until it is back, which a
        // balancer taking every server out of service (they share the store) would stop too.
        const status = store.status === 'ok' ? 'ok' : 'degraded';
        return c.json(full ? { status, store } : { status });
      } catch (e) {
        options.logger.warn('health check failed', { requestId: c.get('requestId'), reason: messageOf(e) });
        return c.json(full ? UNAVAILABLE : { status: 'error' }, 503);
      }
    }),
  );

  // Whether to send this server requests: the database answers. The store is left to /healthz, since
  // it is shared by every server and puts are kept while it is down.
  app.get(
    '/readyz',
    probe(async (c) => {
      c.set('service', 'readyz');
      try {
        const ports = await options.portsFor(c);
        await withTimeout(ports.repos.ping(), PING_TIMEOUT_MS);
        return c.json({ status: 'ready' });
      } catch (e) {
        options.logger.warn('readiness check failed', { requestId: c.get('requestId'), reason: messageOf(e) });
        return c.json({ status: 'not ready' }, 503);
      }
    }),
  );

  app.get('/metrics', async (c) => {
    c.set('service', METRICS_PERMISSION);
    if (!options.metricsPublic) {
      const credentials = parseBasicAuthorization(c.req.header('authorization'));
      if (!credentials) {
        return plain(401, 'Operation only available to registered users', {
          'WWW-Authenticate': `Basic realm="${PRODUCT}"`,
        });
      }
      c.set(
        'caller',
        await authenticate(await options.portsFor(c), credentials, METRICS_PERMISSION, options.clientAddress(c)),
      );
    }
    const ports = await options.portsFor(c);
    const storeUp = ports.store ? storeHealth(ports.store).then((h) => h.status === 'ok') : Promise.resolve(null);
    let fromDatabase = '';
    try {
      fromDatabase = await withTimeout(
        (async () => {
          const engine = renderEngine(
            await ports.repos.dissemination.queueDepth(),
            options.engineStats?.snapshot() ?? null,
          );
          const retention = renderRetention(await ports.repos.retention.totals());
          const store = renderStore(await ports.repos.retention.storeUsage());
          const acquisition =
            renderAcquisition(await ports.repos.acquisition.totals()) +
            renderGlobalCache(await ports.repos.acquisition.cacheTotals());
          const now = ports.clock();
          const alerts = renderAlertFigures(await ports.repos.dissemination.opsFigures(now), now);
          const mail = renderMailOutbox(await ports.repos.mailOutbox.pending());
          const hostChecks = renderHostChecks(await ports.repos.hostChecks.series());
          return engine + retention + store + acquisition + alerts + mail + hostChecks;
        })(),
        PING_TIMEOUT_MS,
      );
    } catch (e) {
      // Still an answer, with ecpds_database_up 0: the alert on it then names the cause, where a failed
      // scrape would only say that the target is down.
      options.logger.warn('metrics without the database', { requestId: c.get('requestId'), reason: messageOf(e) });
    }
    const reachability = renderReachability(fromDatabase !== '', await storeUp);
    return new Response(metrics.render() + fromDatabase + reachability, {
      headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' },
    });
  });
}

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

const probeStatus = (status: string) => ({
  type: 'object',
  properties: { status: { const: status } },
  required: ['status'],
  additionalProperties: false,
});

const plainText = (example: string) => ({ 'text/plain': { schema: { type: 'string' }, example } });

const PROBE_NOTE =
  ' Behind a TLS-terminating proxy (ECPDS_TRUST_PROXY=1), also answered over plain HTTP without ' +
  "`X-Forwarded-Proto`, for the balancer's probes, with the status only.";

/** The routes in OpenAPI form, added to the generated document. */
export const opsPaths = {
  '/healthz': {
    get: {
      operationId: 'healthz',
      summary: 'Process up, database reachable, and the store',
      description:
        'With a store (retrieval on), `store` says whether it writes, reads back and deletes a small object ' +
        '(checked at most every 5 s); `degraded` when it does not, while puts are still accepted.' +
        PROBE_NOTE,
      tags: ['none'],
      security: [],
      responses: {
        200: {
          description: 'Healthy',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  status: { enum: ['ok', 'degraded'] },
                  store: {
                    type: 'object',
                    properties: {
                      status: { enum: ['ok', 'failing'] },
                      description: { type: 'string' },
                      reason: { type: 'string' },
                    },
                    required: ['status', 'description'],
                  },
                },
                required: ['status'],
              },
            },
          },
        },
        403: { $ref: '#/components/responses/NotSecure' },
        503: {
          description: 'The database is unreachable (over plain HTTP, the status only)',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: { status: { const: 'error' }, message: { type: 'string' } },
                required: ['status'],
              },
              example: { status: 'error', message: 'Service unavailable: database unreachable' },
            },
          },
        },
      },
    },
  },
  '/readyz': {
    get: {
      operationId: 'readyz',
      summary: 'Ready for requests: the database answers',
      description: `Within 5 s; the store is not checked (see /healthz).${PROBE_NOTE}`,
      tags: ['none'],
      security: [],
      responses: {
        200: {
          description: 'Ready',
          content: { 'application/json': { schema: probeStatus('ready'), example: { status: 'ready' } } },
        },
        403: { $ref: '#/components/responses/NotSecure' },
        503: {
          description: 'Not ready: the database does not answer',
          content: { 'application/json': { schema: probeStatus('not ready'), example: { status: 'not ready' } } },
        },
      },
    },
  },
  '/metrics': {
    get: {
      operationId: 'metrics',
      summary: 'Prometheus metrics: requests by service and status, latency histogram, requests in flight',
      description:
        'Permission `metrics`, or no credentials at all when the deployment sets ECPDS_METRICS_PUBLIC=1. Also ' +
        "the figures of docs/ops/prometheus-alerts.yml (per destination, the outboxes, movers' leases), and " +
        '`ecpds_database_up` 0 instead of them while the database does not answer.',
      tags: [METRICS_PERMISSION],
      security: [{ basic: [] }, {}],
      responses: {
        200: {
          description: 'Prometheus text format 0.0.4',
          content: plainText('ecpds_http_requests_total{service="datafilePut",status="200"} 3'),
        },
        401: { $ref: '#/components/responses/Unauthenticated' },
        403: { $ref: '#/components/responses/NotSecure' },
        500: { $ref: '#/components/responses/ServiceError' },
        503: { $ref: '#/components/responses/Unavailable' },
      },
    },
  },
};
