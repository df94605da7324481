import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { pageHeaders } from '../page-headers.ts';
import { portalSessionIdentity } from '../session.ts';
import { loginPages } from './login.tsx';
import { logoutPages } from './logout.tsx';
import { type RegistrationOptions, registrationPages } from './register.tsx';

export type PortalPagesOptions = RegistrationOptions;

/** The paths these pages answer, below /portal: their middlewares stay off the file routes mounted beside them. */
const PAGE_PATHS = ['/login', '/logout', '/register', '/verify'];
/** The forms post a few short fields. */
const MAX_FORM_BYTES = 16 * 1024;

/**
 * The portal's browser pages, to mount under /portal next to the file routes: log in and out, the
 * self-service registration and its verification link (the stylesheet is the file routes'). `identify` is
 * the hook of the browser session (the file routes take the same one: portalSessionIdentity).
 */
export function portalPages(options: PortalPagesOptions, identify = portalSessionIdentity(options)) {
  const app = new Hono();
  for (const path of PAGE_PATHS) {
    app.use(path, pageHeaders);
    app.post(path, bodyLimit({ maxSize: MAX_FORM_BYTES, onError: (c) => c.text('The form is too large', 413) }));
  }
  loginPages(app, options, identify);
  logoutPages(app, options);
  registrationPages(app, options);
  return app;
}
