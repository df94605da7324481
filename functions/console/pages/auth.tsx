import type { Context, Hono } from 'hono';
import { getSignedCookie, setSignedCookie } from 'hono/cookie';
import { generateSecret, tokenMatches } from '../../../core/common/crypto.ts';
import { isServiceError } from '../../../core/common/errors.ts';
import { login, logout } from '../../../core/console/sign-in.ts';
import { ErrorNote, Page } from '../layout.tsx';
import { type ConsoleEnv, type ConsoleOptions, clearSession, setSession } from '../session.ts';

const LOGIN_CSRF = 'ecpds_login_csrf';

export function authPages(app: Hono<ConsoleEnv>, options: ConsoleOptions) {
  const loginPage = async (c: Context<ConsoleEnv>, error?: string) => {
    // Before there is a session, the login form's token is tied to a signed cookie of its own.
    const token = generateSecret();
    await setSignedCookie(c, LOGIN_CSRF, token, options.cookieSecret, {
      httpOnly: true,
      secure: true,
      sameSite: 'Strict',
      path: '/console/login',
      maxAge: 3600,
    });
    return c.html(
      <Page title="Log in">
        <ErrorNote message={error} />
        <form method="post" action="/console/login">
          <input type="hidden" name="csrf" value={token} />
          <label for="username">Username</label>
          <input id="username" name="username" type="text" autocomplete="username" required />
          <label for="password">Password</label>
          <input id="password" name="password" type="password" autocomplete="current-password" required />
          <button type="submit">Log in</button>
        </form>
      </Page>,
      error ? 401 : 200,
    );
  };

  app.get('/login', (c) => (c.get('user') ? c.redirect('/console/clients') : loginPage(c)));

  app.post('/login', async (c) => {
    const form = await c.req.parseBody();
    const expected = await getSignedCookie(c, options.cookieSecret, LOGIN_CSRF);
    if (!expected || !tokenMatches(form.csrf, expected))
      return c.text('Refused: the login form is missing its CSRF token. Reload the page and try again.', 403);
    try {
      const { token } = await login(c.get('ports'), {
        username: String(form.username ?? ''),
        password: String(form.password ?? ''),
        address: options.clientAddress(c),
      });
      await setSession(c, options.cookieSecret, token);
      return c.redirect('/console/clients', 303);
    } catch (e) {
      if (isServiceError(e) && e.kind === 'throttled') {
        c.header('Retry-After', String(e.retryAfterSeconds ?? 1));
        return c.html(
          <Page title="Log in">
            <ErrorNote message={e.message} />
          </Page>,
          429,
        );
      }
      if (isServiceError(e)) return loginPage(c, e.message);
      throw e;
    }
  });

  app.post('/logout', async (c) => {
    const token = c.get('token');
    if (token) await logout(c.get('ports'), token);
    clearSession(c);
    return c.redirect('/console/login', 303);
  });
}
