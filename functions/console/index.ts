import { type Context, Hono } from 'hono';
import { CSS, SCRIPT } from './assets.ts';
import { requireAdministrator } from './guard.tsx';
import { auditPage } from './pages/audit.tsx';
import { authPages } from './pages/auth.tsx';
import { clientPages } from './pages/clients.tsx';
import { fieldPages } from './pages/fields.tsx';
import { incomingUserPages } from './pages/incoming-users.tsx';
import { monitorAcquisitionPage } from './pages/monitor-acquisition.tsx';
import { monitorDestinationPage } from './pages/monitor-destination.tsx';
import { monitorDestinationPages } from './pages/monitor-destinations.tsx';
import { monitorProductPages } from './pages/monitor-products.tsx';
import { userPages } from './pages/users.tsx';
import { type ConsoleEnv, type ConsoleOptions, sessionMiddleware } from './session.ts';

export type { ConsoleOptions } from './session.ts';

/** The administration console (spec §5.1), served by the same app under /console. */
export function consoleApp(options: ConsoleOptions) {
  const app = new Hono<ConsoleEnv>();
  const asset = (body: string, type: string) => () =>
    new Response(body, { headers: { 'content-type': type, 'cache-control': 'public, max-age=3600' } });
  app.get('/assets/console.css', asset(CSS, 'text/css; charset=utf-8'));
  app.get('/assets/console.js', asset(SCRIPT, 'text/javascript; charset=utf-8'));

  app.use(sessionMiddleware(options));
  const home = (c: Context<ConsoleEnv>) => c.redirect(c.get('user') ? '/console/clients' : '/console/login', 303);
  app.get('/', home);
  // `/console/` is a path of its own under strict routing: it leads home too.
  app.use(async (c, next) => (c.req.method === 'GET' && c.req.path === '/console/' ? home(c) : next()));
  authPages(app, options);
  app.use('/clients/*', requireAdministrator);
  app.use('/clients', requireAdministrator);
  app.use('/users/*', requireAdministrator);
  app.use('/users', requireAdministrator);
  app.use('/incoming/*', requireAdministrator);
  app.use('/incoming', requireAdministrator);
  app.use('/fields/*', requireAdministrator);
  app.use('/fields', requireAdministrator);
  app.use('/audit', requireAdministrator);
  app.use('/monitor/*', requireAdministrator);
  clientPages(app);
  userPages(app);
  incomingUserPages(app);
  fieldPages(app);
  auditPage(app);
  monitorDestinationPages(app);
  monitorDestinationPage(app);
  monitorAcquisitionPage(app);
  monitorProductPages(app);
  return app;
}
