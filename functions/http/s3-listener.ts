import { Hono } from 'hono';
import type { Logger } from '../../core/ports.ts';
import type { PortalOptions } from '../portal/options.ts';
import { s3ErrorAnswer } from '../portal/s3/errors.ts';
import { s3RootRoutes } from '../portal/s3/index.ts';
import type { Env } from './app.ts';
import type { Metrics } from './metrics.ts';
import { accessLog, requestId, requestMetrics, secureOnly } from './middleware.ts';

/**
 * The app of the portal's S3 listener (ECPDS_PORTAL_S3_PORT on Node): the S3 endpoint at its root,
 * path style or `<bucket>.<ECPDS_PORTAL_S3_DOMAIN>`, as S3 clients address a service whose endpoint
 * is a host. Some sign as if it were at the root whatever path their endpoint names (s3cmd), so
 * `/portal/s3` of the main app cannot serve them. Nothing else is served there; requests are logged,
 * counted (as the portal's) and refused over plain HTTP as on the main app.
 */
export function s3ListenerApp(portal: PortalOptions, shell: { logger: Logger; trustProxy: boolean; metrics: Metrics }) {
  const app = new Hono<Env>();
  app.use(
    requestId(),
    accessLog(shell.logger),
    async (c, next) => {
      c.set('service', 'portal');
      await next();
    },
    requestMetrics(shell.metrics),
    secureOnly(shell.trustProxy),
  );
  app.route('/', s3RootRoutes(portal));
  app.onError((error, c) => s3ErrorAnswer(error, c.get('requestId') ?? 'unknown', shell.logger, c.req.path));
  return app;
}
