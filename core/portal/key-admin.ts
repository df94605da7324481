import { conflict, invalid, notFound } from '../common/errors.ts';
import { recordIn } from '../console/audit.ts';
import type { Ports } from '../ports.ts';
import { requireUser } from './admin.ts';
import { type AuthorizedKey, parseAuthorizedKey } from './authorized-keys.ts';

/**
 * An operator's changes to an incoming user's SFTP keys, from the command line or the console,
 * each audited in its transaction (the fingerprint names the key; the key itself is public).
 */

const TARGET_KIND = 'incoming user';

export async function listKeys(ports: Ports, userId: string): Promise<AuthorizedKey[]> {
  await requireUser(ports.repos, userId);
  return ports.repos.portal.authorizedKeys(userId);
}

/** Adds the key of an OpenSSH public key line; a conflict when the user has it already. */
export async function addKey(ports: Ports, actor: string, userId: string, line: string): Promise<AuthorizedKey> {
  const key = parseAuthorizedKey(line);
  return ports.repos.transaction(async (repos) => {
    await requireUser(repos, userId);
    const at = ports.clock();
    if (!(await repos.portal.addAuthorizedKey(userId, key, at))) {
      throw conflict(`Incoming user ${userId} already has the key ${key.fingerprint}`);
    }
    await recordIn(repos, at, {
      actor,
      action: 'add portal key',
      targetKind: TARGET_KIND,
      target: userId,
      detail: `${key.algorithm} ${key.fingerprint}${key.comment === '' ? '' : ` ${key.comment}`}`,
    });
    return { ...key, addedAt: at };
  });
}

const FINGERPRINT = /^SHA256:[A-Za-z0-9+/]{43}$/;

/** Removes the user's key of this fingerprint (`SHA256:...`, as `list` shows it). */
export async function removeKey(ports: Ports, actor: string, userId: string, fingerprint: string): Promise<void> {
  const wanted = fingerprint.trim();
  if (!FINGERPRINT.test(wanted)) {
    throw invalid(`'${wanted.slice(0, 60)}' is not a key fingerprint (SHA256:<43 characters>, as the list shows)`);
  }
  await ports.repos.transaction(async (repos) => {
    await requireUser(repos, userId);
    if (!(await repos.portal.removeAuthorizedKey(userId, wanted))) {
      throw notFound(`Incoming user ${userId} has no key ${wanted}`);
    }
    await recordIn(repos, ports.clock(), {
      actor,
      action: 'remove portal key',
      targetKind: TARGET_KIND,
      target: userId,
      detail: wanted,
    });
  });
  // Sessions this key opened end at their next request here, and within the re-check interval elsewhere.
  ports.portalLogins.forget(userId);
}
