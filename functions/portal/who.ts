import type { Context } from 'hono';
import { parseBasicAuthorization } from '../../core/api-clients/auth.ts';
import { type PortalIdentity, PortalLoginRefused, portalLogin } from '../../core/portal/access.ts';
import type { Ports } from '../../core/ports.ts';
import { loginFailed, PortalAnswer } from './errors.ts';
import type { PortalSessionUser } from './session.ts';

/** The portal's protocol name here: `portal.excludeProtocols`, DEA and INH lines. */
export const HTTPS = 'https';

/** Whoever a request of the tree is from, and where that tree starts. */
export interface Visitor {
  identity: PortalIdentity;
  /** The tree's base path: `/portal/data/`, or `/portal/home/<user>/` for open access. */
  base: string;
  /** The browser session it came with: its login for the page, its token for forms. */
  session: { login: string; csrf: string } | null;
}

export interface WhoOptions {
  clientAddress(c: Context): string;
  sessionIdentity?(c: Context): Promise<PortalSessionUser | null>;
}

export const DATA_BASE = '/portal/data/';

/**
 * Who is asking for `/portal/data/...`: Basic credentials through the portal's login check, else a
 * browser session; else a browser is sent to the login page and anything else told to log in.
 */
export async function dataVisitor(c: Context, ports: Ports, options: WhoOptions): Promise<Visitor> {
  const authorization = c.req.header('authorization');
  if (authorization !== undefined) {
    const credentials = parseBasicAuthorization(authorization);
    if (credentials === null) throw new PortalAnswer(loginFailed());
    const identity = await portalLogin(ports, {
      login: credentials.username,
      password: credentials.secret,
      address: options.clientAddress(c),
      protocol: HTTPS,
    });
    return { identity, base: DATA_BASE, session: null };
  }
  const session = (await options.sessionIdentity?.(c)) ?? null;
  if (session !== null) {
    return { identity: session.identity, base: DATA_BASE, session: { login: session.login, csrf: session.csrf } };
  }
  if (/text\/html/i.test(c.req.header('accept') ?? '')) {
    const url = new URL(c.req.url);
    const next = encodeURIComponent(`${url.pathname}${url.search}`);
    throw new PortalAnswer(new Response(null, { status: 303, headers: { location: `/portal/login?next=${next}` } }));
  }
  throw new PortalAnswer(loginFailed());
}

/**
 * Who is asking for `/portal/home/<user>/...`: nobody in particular, let in by the user's own
 * login check without credentials, which only an open-access user passes.
 */
export async function openAccessVisitor(c: Context, ports: Ports, options: WhoOptions, user: string): Promise<Visitor> {
  const identity = await portalLogin(ports, {
    login: user,
    password: null,
    address: options.clientAddress(c),
    protocol: HTTPS,
  });
  if (identity.mode !== 'open-access') throw new PortalLoginRefused(false);
  return { identity, base: `/portal/home/${encodeURIComponent(user)}/`, session: null };
}
