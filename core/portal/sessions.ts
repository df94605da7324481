import { generateSecret, sha256Base64, tokenMatches } from '../common/crypto.ts';
import type { IncomingUser } from '../incoming-users/ports.ts';
import type { Ports } from '../ports.ts';
import { admit, type PortalIdentity, PortalLoginRefused, portalLogin } from './access.ts';
import { portalMode } from './login.ts';
import type { PortalSession } from './ports.ts';
import { credentialFingerprint } from './revocation.ts';

/**
 * The portal's browser sessions: a login form opens one after the one login check (portalLogin);
 * the cookie holds a random token of which only the hash is stored. Every request goes through
 * the rest of the login check again (admit), so a user disabled, over a limit or left without
 * destinations meanwhile is refused at its next request, not an hour later.
 */

/** A session ends after an hour without a request (sliding). */
export const PORTAL_IDLE_MS = 3600_000;
/** The last request's time is written at most this often: not one write per listing or download. */
const TOUCH_AFTER_MS = 60_000;
const PROTOCOL = 'https';

const hashOf = (token: string) => sha256Base64(token);

export interface OpenedSession {
  /** For the cookie only: never stored, never logged. */
  token: string;
  csrf: string;
  identity: PortalIdentity;
}

/**
 * What a login form leads to: a session, or for an open-access user (whose files are public and
 * whose "login" checks no password) its public tree instead, so no session ever rests on no password.
 */
export type FormLogin = { session: OpenedSession } | { openAccess: string };

export async function openSession(
  ports: Ports,
  attempt: { login: string; password: string; address: string },
): Promise<FormLogin> {
  const identity = await portalLogin(ports, { ...attempt, protocol: PROTOCOL });
  if (identity.mode === 'open-access') return { openAccess: identity.userId };
  const now = ports.clock();
  const token = generateSecret();
  const csrf = generateSecret();
  const { portal } = ports.repos;
  // Sessions left to idle out are only removed when their cookie comes back: the user's next login
  // clears its own. Other sessions of the user stay: subscribers and colleagues share one user id.
  await portal.endIdleSessions(identity.userId, new Date(now.getTime() - PORTAL_IDLE_MS));
  await portal.createSession(hashOf(token), {
    userId: identity.userId,
    subscriberId: identity.subscriberId,
    csrf,
    credential: identity.credential,
    lastSeenAt: now,
  });
  return { session: { token, csrf, identity } };
}

export interface SessionUser {
  identity: PortalIdentity;
  csrf: string;
}

/**
 * The session of a cookie's token, checked as a login is: null when it is unknown, idle for an
 * hour, or no longer opened by what opened it (the user gone or disabled, its password or mode
 * changed, the subscriber revoked) — such a session is ended, not only refused, so setting things back does not
 * revive it. A user over a limit that passes with time (connections, quotas) keeps its session and
 * gets PortalLoginRefused with `overLimit`.
 */
export async function sessionOf(ports: Ports, token: string, at: { address: string }): Promise<SessionUser | null> {
  const hash = hashOf(token);
  const { portal } = ports.repos;
  const session = await portal.session(hash);
  if (session === null) return null;
  const now = ports.clock();
  const idle = now.getTime() - session.lastSeenAt.getTime();
  const end = async () => {
    await portal.deleteSession(hash);
    return null;
  };
  if (idle > PORTAL_IDLE_MS) return end();
  const [user, subscriber] = await Promise.all([
    ports.repos.incomingUsers.find(session.userId),
    session.subscriberId === null ? null : portal.subscriber(session.subscriberId),
  ]);
  if (user === null || !stillOpens(user, session, subscriber?.status ?? null)) return end();
  try {
    const identity = await admit(ports, user, session.subscriberId, {
      login: user.id,
      address: at.address,
      protocol: PROTOCOL,
    });
    if (idle > TOUCH_AFTER_MS) await portal.touchSession(hash, now);
    return { identity, csrf: session.csrf };
  } catch (e) {
    if (e instanceof PortalLoginRefused && !e.overLimit) return end();
    throw e;
  }
}

/**
 * Whether what opened the session would open it now: the same credentials of the user (its password,
 * mode, being active: credentialFingerprint), and its own password or an active subscriber's.
 */
function stillOpens(user: IncomingUser, session: PortalSession, subscriberStatus: string | null) {
  // A user disabled is refused as such (and the session ended) by the login check after this.
  if (user.active && session.credential !== credentialFingerprint(user)) return false;
  const mode = portalMode(user.portalService);
  return session.subscriberId === null
    ? mode === 'standard-login'
    : mode === 'self-service' && subscriberStatus === 'active';
}

/**
 * Ends the session of a log-out form carrying its CSRF token. False when the token is wrong (the
 * session stays); an unknown or ended session has nothing left to end and counts as logged out.
 */
export async function logout(ports: Ports, token: string, csrf: unknown): Promise<boolean> {
  const hash = hashOf(token);
  const session = await ports.repos.portal.session(hash);
  if (session === null) return true;
  if (!tokenMatches(csrf, session.csrf)) return false;
  await ports.repos.portal.deleteSession(hash);
  return true;
}

/**
 * Ends a session without its CSRF token: for the log-out page opened from the portal's own pages or
 * typed in, which the browser vouches for (functions/portal/pages/logout.tsx); another site's link
 * only gets a page asking.
 */
export const endSession = (ports: Ports, token: string) => ports.repos.portal.deleteSession(hashOf(token));
