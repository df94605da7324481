import { deaEvent } from '../common/events.ts';
import type { Ports } from '../ports.ts';
import { admit, type PortalIdentity, type PortalLoginAttempt, PortalLoginRefused } from './access.ts';
import type { PortalOperation } from './ports.ts';
import { credentialFingerprint, mayStill } from './revocation.ts';

/** The DEA line's reason when what a session or upload was let in on changed since its login. */
export const CREDENTIALS_CHANGED = 'Credentials changed since login';

/**
 * The user of a login made earlier (a lasting session, an upload whose bytes are in) as it is now:
 * refused (PortalLoginRefused, with its DEA line) once its credentials differ from those it was let
 * in on, or the login check refuses it; limits are not judged (its own transfer counts toward them).
 */
export async function stillAdmitted(
  ports: Ports,
  identity: PortalIdentity,
  attempt: Pick<PortalLoginAttempt, 'address' | 'protocol'>,
): Promise<PortalIdentity> {
  const { userId, subscriberId } = identity;
  const user = await ports.repos.incomingUsers.find(userId);
  if (user === null) throw new PortalLoginRefused(false);
  // A user disabled is refused as such by the login check below.
  if (user.active && credentialFingerprint(user) !== identity.credential) {
    const context = `${attempt.protocol}:${attempt.address}`;
    ports.events.write(deaEvent({ at: ports.clock(), userId, message: CREDENTIALS_CHANGED, context }));
    throw new PortalLoginRefused(false);
  }
  return admit(ports, user, subscriberId, { ...attempt, login: userId }, false);
}

/** stillAdmitted, and still allowed `operation` on `path` below `destination` (mayStill). */
export async function stillAllowed(
  ports: Ports,
  identity: PortalIdentity,
  attempt: Pick<PortalLoginAttempt, 'address' | 'protocol'>,
  can: { operation: PortalOperation; destination: string; path: string },
): Promise<PortalIdentity> {
  const now = await stillAdmitted(ports, identity, attempt);
  if (!mayStill(now, can.operation, can.destination, can.path)) throw new PortalLoginRefused(false);
  return now;
}
