import type { Context, Hono } from 'hono';
import { isServiceError } from '../../../core/common/errors.ts';
import { PortalLoginRefused } from '../../../core/portal/access.ts';
import { LOGIN_FAILED } from '../../../core/portal/login.ts';
import { openSession } from '../../../core/portal/sessions.ts';
import { ErrorNote, PortalPage } from '../layout.tsx';
import { openAccessHome } from '../open-access.tsx';
import { type PortalSessionOptions, type PortalSessionUser, setPortalSession } from '../session.ts';
import { FORM_REFUSED, formToken, formTokenMatches } from './form-token.ts';

/** Where a login leads when it names no page of its own. */
export const PORTAL_START = '/portal/data/';

/**
 * The page to go to after logging in, when `next` is a path of the portal on this site; anything
 * else (another site, `//host`, a backslash, a path that leaves /portal once normalised) is ignored.
 */
export function portalPathOrNull(next: unknown): string | null {
  if (typeof next !== 'string' || next.length > 2048 || !next.startsWith('/portal/')) return null;
  if (/[\\\p{Cc}]/u.test(next)) return null;
  const base = 'https://portal.invalid';
  const url = new URL(next, base);
  if (url.origin !== base || !url.pathname.startsWith('/portal/')) return null;
  return `${url.pathname}${url.search}`;
}

interface LoginFormProps {
  token: string;
  next: string | null;
  login?: string;
  message?: string;
}

function LoginForm({ token, next, login, message }: LoginFormProps) {
  return (
    <PortalPage title="Log in">
      <ErrorNote message={message} />
      <form method="post" action="/portal/login">
        <input type="hidden" name="csrf" value={token} />
        {next && <input type="hidden" name="next" value={next} />}
        <label for="login">Login</label>
        <input
          id="login"
          name="login"
          type="text"
          value={login ?? ''}
          autocomplete="username"
          autocapitalize="none"
          spellcheck={false}
          required
        />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required />
        <button type="submit">Log in</button>
      </form>
      <p class="muted">
        Registered on a self-service page? Your login is the one named in the e-mail that gave you your password.
      </p>
    </PortalPage>
  );
}

type Identify = (c: Context) => Promise<PortalSessionUser | null>;

export function loginPages(app: Hono, options: PortalSessionOptions, identify: Identify) {
  const form = async (c: Context, status: 200 | 401 | 429, next: string | null, login?: string) => {
    const token = await formToken(c, options.cookieSecret);
    const message = status === 200 ? undefined : LOGIN_FAILED;
    return c.html(<LoginForm token={token} next={next} login={login} message={message} />, status);
  };

  app.get('/login', async (c) => {
    const next = portalPathOrNull(c.req.query('next'));
    // Already logged in: on to the page asked for. A session over a limit just sees the form.
    const current = await identify(c).catch(() => null);
    if (current) return c.redirect(next ?? PORTAL_START, 303);
    return form(c, 200, next);
  });

  app.post('/login', async (c) => {
    const body = await c.req.parseBody();
    if (!(await formTokenMatches(c, options.cookieSecret, body.csrf))) return c.text(FORM_REFUSED, 403);
    const next = portalPathOrNull(body.next);
    const login = typeof body.login === 'string' ? body.login : '';
    const password = typeof body.password === 'string' ? body.password : '';
    const ports = await options.portsFor(c);
    try {
      const opened = await openSession(ports, { login, password, address: options.clientAddress(c) });
      if ('openAccess' in opened) return c.redirect(openAccessHome(opened.openAccess), 303);
      await setPortalSession(c, options.cookieSecret, opened.session.token);
      return c.redirect(next ?? PORTAL_START, 303);
    } catch (e) {
      // One message whatever the reason (the reason went to the DEA line); 429 for what passes with time.
      if (e instanceof PortalLoginRefused) return form(c, e.overLimit ? 429 : 401, next, login);
      if (isServiceError(e) && e.kind === 'throttled') {
        c.header('Retry-After', String(e.retryAfterSeconds ?? 1));
        return form(c, 429, next, login);
      }
      throw e;
    }
  });
}
