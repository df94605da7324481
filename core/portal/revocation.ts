import { sha256Base64 } from '../common/crypto.ts';
import type { IncomingUser } from '../incoming-users/ports.ts';
import type { PortalIdentity } from './access.ts';
import { portalMode } from './login.ts';
import { allowed } from './options.ts';
import type { PortalOperation } from './ports.ts';

/**
 * What keeps a portal session or an open file going after its login: the one answer to "may this
 * user still do this here", and the fingerprint of the credentials the session was opened with. Each
 * transport asks them again while a session lasts (a browser session on every request, an SFTP
 * session every few seconds and at once after a change made in its own process), so a change of the
 * user ends or narrows what it has open.
 */

/** How often a lasting session (SFTP) reads its user again by default, when no change was seen here. */
export const DEFAULT_PORTAL_RECHECK_MS = 5000;

/**
 * Whether the user may (still) do `operation` on `path` below `destination` ('' for the destination
 * itself): the destination is one of its own and its permissions and path rules allow it.
 */
export function mayStill(identity: PortalIdentity, operation: PortalOperation, destination: string, path: string) {
  if (!identity.destinations.includes(destination)) return false;
  return allowed(
    identity.permissions,
    identity.settings,
    operation,
    path === '' ? destination : `${destination}/${path}`,
  );
}

/**
 * A fingerprint of what the user's logins rest on: its mode, being active, and its password (the
 * sealed form, which changes only when the password does). A session keeps the one of its login;
 * once the user's differs, the session ends (it is not revived by setting things back). A hash: the
 * browser session's row keeps it, never the sealed password itself.
 */
export function credentialFingerprint(user: Pick<IncomingUser, 'portalService' | 'active' | 'passwordSealed'>) {
  return sha256Base64(JSON.stringify([portalMode(user.portalService), user.active, user.passwordSealed ?? '']));
}
