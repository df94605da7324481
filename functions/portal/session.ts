import type { Context } from 'hono';
import { deleteCookie, getSignedCookie, setSignedCookie } from 'hono/cookie';
import { tokenMatches } from '../../core/common/crypto.ts';
import type { PortalIdentity } from '../../core/portal/access.ts';
import { PORTAL_IDLE_MS, sessionOf } from '../../core/portal/sessions.ts';
import type { Ports } from '../../core/ports.ts';

/** The portal's browser session: a signed cookie holding a random token (its hash is the stored key). */
export const PORTAL_COOKIE = 'ecpds_portal';

export interface PortalSessionOptions {
  portsFor(c: Context): Promise<Ports> | Ports;
  /** Signs the portal's cookies: `ports.secrets.derive('portal-cookie')`, the same on every server. */
  cookieSecret: string;
  /** The client's address, for login throttling and the DEA lines. */
  clientAddress(c: Context): string;
}

/** Who a browser session belongs to, for the file routes and the pages. */
export interface PortalSessionUser {
  identity: PortalIdentity;
  /** The login the session was opened with (a self-service subscriber logs in with the user's id). */
  login: string;
  /** The session's token for its forms (log out, uploads, deletes). */
  csrf: string;
}

// Lax, not Strict: a link to a listing from a mail or another site opens it logged in; the
// session's forms carry a CSRF token, so a cross-site post gets nothing from the cookie.
export const setPortalSession = (c: Context, secret: string, token: string) =>
  setSignedCookie(c, PORTAL_COOKIE, token, secret, {
    httpOnly: true,
    secure: true,
    sameSite: 'Lax',
    path: '/portal',
    // The session ends on the server after an hour idle; the cookie only needs to outlive that.
    maxAge: Math.floor((PORTAL_IDLE_MS * 24) / 1000),
  });

export const clearPortalSession = (c: Context) =>
  deleteCookie(c, PORTAL_COOKIE, { path: '/portal', secure: true, httpOnly: true, sameSite: 'Lax' });

/** The session cookie's token, when it carries a valid signature. */
export async function sessionToken(c: Context, secret: string): Promise<string | null> {
  return (await getSignedCookie(c, secret, PORTAL_COOKIE)) || null;
}

/**
 * The hook the portal's routes call: the browser session of a request, checked as a login is
 * (core/portal/sessions.ts), or null when there is none or it has ended (its cookie is then
 * cleared). Throws PortalLoginRefused with `overLimit` (429) when the session's user is over a limit
 * that passes with time. Resolved once per request, however many routes and middlewares ask.
 */
export function portalSessionIdentity(options: PortalSessionOptions) {
  const resolved = new WeakMap<Request, Promise<PortalSessionUser | null>>();
  const resolve = async (c: Context): Promise<PortalSessionUser | null> => {
    const token = await sessionToken(c, options.cookieSecret);
    if (token === null) {
      if (c.req.header('cookie')?.includes(`${PORTAL_COOKIE}=`)) clearPortalSession(c);
      return null;
    }
    const ports = await options.portsFor(c);
    const found = await sessionOf(ports, token, { address: options.clientAddress(c) });
    if (found === null) {
      clearPortalSession(c);
      return null;
    }
    return { identity: found.identity, login: found.identity.userId, csrf: found.csrf };
  };
  return (c: Context): Promise<PortalSessionUser | null> => {
    let found = resolved.get(c.req.raw);
    if (found === undefined) {
      found = resolve(c);
      resolved.set(c.req.raw, found);
    }
    return found;
  };
}

const FORM_TYPES = /^\s*(application\/x-www-form-urlencoded|multipart\/form-data)\s*(;|$)/i;

/**
 * Whether a post carries the session's CSRF token: the `X-CSRF-Token` header (scripts, and uploads
 * that should not be read as a form first), else the form's `csrf` field.
 */
export async function csrfMatches(c: Context, expected: string): Promise<boolean> {
  const header = c.req.header('x-csrf-token');
  if (header !== undefined) return tokenMatches(header, expected);
  if (!FORM_TYPES.test(c.req.header('content-type') ?? '')) return false;
  const form = await c.req.parseBody();
  return tokenMatches(form.csrf, expected);
}

export const CSRF_REFUSED =
  'Refused: the form is missing its CSRF token or the session has ended. Reload the page and try again.';

/** A 403 for a form post without the session's CSRF token, or null when it carries it. */
export async function refuseWithoutCsrf(c: Context, expected: string): Promise<Response | null> {
  return (await csrfMatches(c, expected)) ? null : c.text(CSRF_REFUSED, 403);
}
