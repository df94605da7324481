import type { Context, MiddlewareHandler } from 'hono';
import { deleteCookie, getSignedCookie, setSignedCookie } from 'hono/cookie';
import { tokenMatches } from '../../core/common/crypto.ts';
import { type ConsoleUser, currentUser, IDLE_MS } from '../../core/console/sign-in.ts';
import type { Ports } from '../../core/ports.ts';

export const SESSION_COOKIE = 'ecpds_console';

export interface ConsoleOptions {
  portsFor(c: Context): Promise<Ports> | Ports;
  /** Signs the session cookie; derived from the deployment's secret key. */
  cookieSecret: string;
  /** The client's address, for login throttling. */
  clientAddress(c: Context): string;
}

export type ConsoleEnv = { Variables: { ports: Ports; user: ConsoleUser | null; token: string | null } };

export const setSession = (c: Context, secret: string, token: string) =>
  setSignedCookie(c, SESSION_COOKIE, token, secret, {
    httpOnly: true,
    secure: true,
    sameSite: 'Strict',
    path: '/console',
    maxAge: Math.floor(IDLE_MS / 1000) * 48,
  });

export const clearSession = (c: Context) => deleteCookie(c, SESSION_COOKIE, { path: '/console', secure: true });

/** Resolves the session of every console request; a form post must carry the session's CSRF token. */
export function sessionMiddleware(options: ConsoleOptions): MiddlewareHandler<ConsoleEnv> {
  return async (c, next) => {
    const ports = await options.portsFor(c);
    c.set('ports', ports);
    const token = (await getSignedCookie(c, options.cookieSecret, SESSION_COOKIE)) || null;
    const user = token ? await currentUser(ports, token) : null;
    c.set('token', user ? token : null);
    c.set('user', user);
    if (c.req.method === 'POST' && c.req.path !== '/console/login') {
      const form = await c.req.parseBody();
      if (!user || !tokenMatches(form.csrf, user.csrf)) {
        return c.text(
          'Refused: the form is missing its CSRF token or the session has ended. Reload the page and try again.',
          403,
        );
      }
    }
    await next();
    c.header('Cache-Control', 'no-store');
    c.header(
      'Content-Security-Policy',
      "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self'; " +
        "form-action 'self'; frame-ancestors 'none'",
    );
    c.header('X-Frame-Options', 'DENY');
    c.header('Referrer-Policy', 'no-referrer');
  };
}
