import type { Hono } from 'hono';
import { authenticate, parseBasicAuthorization } from '../../core/api-clients/auth.ts';
import { PRODUCT } from '../../core/system/version.ts';
import type { AppOptions, Env } from './app.ts';
import { plain } from './errors.ts';
import { type Metrics, renderEngine } from './metrics.ts';
import { renderRetention, renderStore } from './retention-metrics.ts';

/** The permission /metrics asks for, matched like a service name (so `.*` grants it). */
export const METRICS_PERMISSION = 'metrics';
// A database that does not answer at all must still give the probe an answer.
const PING_TIMEOUT_MS = 5000;

/** /healthz and /metrics: outside /v1, behind the same HTTPS rule as everything else. */
export function opsRoutes(app: Hono<Env>, options: AppOptions, metrics: Metrics) {
  app.get('/healthz', async (c) => {
    c.set('service', 'healthz');
    try {
      const ports = await options.portsFor(c);
      await withTimeout(ports.repos.ping(), PING_TIMEOUT_MS);
      return c.json({ status: 'ok' });
    } catch (e) {
      options.logger.warn('health check failed', {
        requestId: c.get('requestId'),
        reason: e instanceof Error ? e.message : String(e),
      });
      return c.json({ status: 'error', message: 'Service unavailable: database unreachable' }, 503);
    }
  });

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
    const engine = renderEngine(await ports.repos.dissemination.queueDepth(), options.engineStats?.snapshot() ?? null);
    const retention = renderRetention(await ports.repos.retention.totals());
    const store = renderStore(await ports.repos.retention.storeUsage());
    return new Response(metrics.render() + engine + retention + store, {
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

const plainText = (example: string) => ({ 'text/plain': { schema: { type: 'string' }, example } });

/** The two routes in OpenAPI form, added to the generated document. */
export const opsPaths = {
  '/healthz': {
    get: {
      operationId: 'healthz',
      summary: 'Process up and database reachable',
      tags: ['none'],
      security: [],
      responses: {
        200: {
          description: 'Healthy',
          content: {
            'application/json': {
              schema: { type: 'object', properties: { status: { const: 'ok' } }, required: ['status'] },
            },
          },
        },
        403: { $ref: '#/components/responses/NotSecure' },
        503: { $ref: '#/components/responses/Unavailable' },
      },
    },
  },
  '/metrics': {
    get: {
      operationId: 'metrics',
      summary: 'Prometheus metrics: requests by service and status, latency histogram, requests in flight',
      description: 'Permission `metrics`, or no credentials at all when the deployment sets ECPDS_METRICS_PUBLIC=1.',
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
