import { checkLimited } from '../api-clients/auth-throttle.ts';
import type { FailureLog } from '../api-clients/ports.ts';
import { constantTimeEqualText, sha256Base64 } from '../common/crypto.ts';
import { ServiceError } from '../common/errors.ts';
import { deaEvent } from '../common/events.ts';
import type { IncomingUser } from '../incoming-users/ports.ts';
import type { Ports } from '../ports.ts';
import { checkLogin, credentialsToCheck, LOGIN_FAILED, type LoginFacts, type PortalMode, portalMode } from './login.ts';
import { type PortalSettings, portalSettings } from './options.ts';
import type { PortalOperation } from './ports.ts';
import { credentialFingerprint } from './revocation.ts';

/** Who is logged in to the portal, and what that user may do. */
export interface PortalIdentity {
  userId: string;
  /** The self-service subscriber whose password opened it. */
  subscriberId: number | null;
  mode: PortalMode;
  country: string;
  destinations: string[];
  permissions: PortalOperation[];
  settings: PortalSettings;
  /**
   * The fingerprint of the credentials the user was let in on (credentialFingerprint): a session
   * opened with it ends once the user's differs (its password, mode or being active changed).
   */
  credential: string;
}

export interface PortalLoginAttempt {
  login: string;
  /** Null for an open-access visit, which gives none, for a request proving it holds the password, or a login by key. */
  password: string | null;
  /**
   * In place of the password, a proof of holding it (an S3 request's signature, made with it as the
   * secret key): called with the user's own password. Self-service subscribers' passwords are kept
   * only as hashes, so a proof never opens a self-service user.
   */
  proof?: (password: string) => Promise<boolean>;
  /**
   * A login by key: the fingerprint of the public key whose signature the transport (SSH) verified.
   * It opens only the account that lists that key among its own, in standard-login mode, where it
   * stands for the password; the rest of the check is the same. Null: a key whose signature did not
   * verify, which opens nothing (a failed authentication like a wrong password).
   */
  keyFingerprint?: string | null;
  address: string;
  /** `https`, `sftp`, `s3`: for `portal.excludeProtocols` and the DEA line. */
  protocol: string;
}

/**
 * A refused portal login. Its message is always `Login failed`; `overLimit` says it passes with time
 * (connections, quotas), which HTTP answers 429 rather than 401. The reason went to the DEA line.
 */
export class PortalLoginRefused extends ServiceError {
  constructor(readonly overLimit: boolean) {
    super('unauthorized', LOGIN_FAILED);
  }
}

/** A login is recorded at most this often per user (lastLoginDate): each HTTP request logs in. */
const RECORD_LOGIN_EVERY_MS = 60_000;

/** The portal's failed logins, in the console's table under keys of their own. */
const portalFailures = (log: FailureLog): FailureLog => ({
  recent: (key, since, keep) => log.recent(`portal:${key}`, since, keep),
  add: (key, at, since, keep) => log.add(`portal:${key}`, at, since, keep),
});

/**
 * The one login check of the data portal, for every protocol: the reference's order (checkLogin),
 * under the API's failed-authentication rules for wrong credentials (wire-decisions §2: 429 for a
 * pair that failed too often, never a lock-out of a right password). A refusal writes a DEA line
 * and throws PortalLoginRefused; a throttled pair gets the API's 429. A success with credentials
 * lets the same credentials in again for a moment without the check (PortalLoginMemory).
 */
export async function portalLogin(ports: Ports, presentedAttempt: PortalLoginAttempt): Promise<PortalIdentity> {
  const attempt = withStorableLogin(presentedAttempt);
  const { password } = attempt;
  // An open-access visit gives no credentials to remember.
  if (password === null) return checkedLogin(ports, attempt);
  const presented = { ...attempt, password };
  const memory = ports.portalLogins;
  const now = ports.clock().getTime();
  // Nothing awaited before a check is under way: logins arriving together find it and wait for it.
  const known = memory.recall(presented, now) ?? memory.underWay(presented);
  const identity = known === null ? null : await known;
  if (identity !== null) return readmit(ports, identity, attempt);
  return memory.check(presented, now, () => checkedLogin(ports, attempt));
}

/**
 * No database text holds U+0000, and a query naming it fails: such a login is read with U+FFFD in
 * its place, which no user id holds either (INCOMING_ID), so it fails and is counted as any unknown
 * login does, from every protocol, instead of failing in storage.
 */
const withStorableLogin = (attempt: PortalLoginAttempt): PortalLoginAttempt =>
  attempt.login.includes('\u0000') ? { ...attempt, login: attempt.login.replaceAll('\u0000', '\uFFFD') } : attempt;

/**
 * A login with the same credentials as one let in a moment ago (PortalLoginMemory): its identity
 * again, if the user's quotas, read on every login, are not spent meanwhile. Its running
 * connections are not counted again: a transfer's start counts them (startPortalTransfer).
 */
async function readmit(ports: Ports, identity: PortalIdentity, attempt: PortalLoginAttempt) {
  const now = ports.clock();
  const spent = await quotasSpent(ports, identity.userId, identity.settings, now);
  const decision = checkLogin({
    ...emptyFacts,
    user: { id: identity.userId, active: true, portalService: identity.mode },
    userPasswordMatches: true,
    subscriberPasswordMatches: true,
    uploadQuotaSpent: spent.upload,
    downloadQuotaSpent: spent.download,
  });
  if (!decision.ok) {
    deny(ports, attempt, decision.reason, now);
    throw new PortalLoginRefused(decision.overLimit === true);
  }
  return identity;
}

/** The login check itself, every fact read now. */
async function checkedLogin(ports: Ports, attempt: PortalLoginAttempt): Promise<PortalIdentity> {
  const now = ports.clock();
  const { repos } = ports;
  type Judged = { refused: string } | { user: IncomingUser; subscriberId: number | null };
  const judged = async (): Promise<Judged> => {
    const user = await repos.incomingUsers.find(attempt.login);
    const mode = portalMode(user?.portalService ?? '');
    const checked = user === null ? 'user' : credentialsToCheck(mode);
    const byKey = attempt.keyFingerprint !== undefined;
    const [userPasswordMatches, subscriber] = await Promise.all([
      checked !== 'user' || user === null
        ? false
        : byKey
          ? attempt.keyFingerprint !== null &&
            (await repos.portal.authorizedKey(user.id, attempt.keyFingerprint!)) !== null
          : userPasswordIs(ports, user.passwordSealed, attempt),
      checked === 'subscriber' && user !== null && attempt.password !== null && !byKey
        ? repos.portal.activeSubscriberByPassword(user.id, sha256Base64(attempt.password))
        : null,
    ]);
    const credentialsRight =
      user?.active === true && (checked === 'none' || userPasswordMatches || subscriber !== null);
    // Wrong credentials, an unknown user or a disabled one count as failed authentications; the
    // limits of a user who got in right are not failures, and never hold a right password back.
    if (!credentialsRight || user === null)
      return { refused: await refuse(user, userPasswordMatches, subscriber !== null) };
    return { user, subscriberId: subscriber?.id ?? null };
  };
  const refuse = async (
    user: Awaited<ReturnType<typeof repos.incomingUsers.find>>,
    userOk: boolean,
    subOk: boolean,
  ) => {
    const decision = checkLogin({
      ...emptyFacts,
      user,
      userPasswordMatches: userOk,
      subscriberPasswordMatches: subOk,
      credentials: attempt.keyFingerprint === undefined ? 'password' : 'key',
    });
    return decision.ok ? 'Login failed' : decision.reason;
  };

  // An open-access visit gives no credentials to count; a login with some goes through the limits.
  const outcome =
    attempt.password === null && attempt.proof === undefined && attempt.keyFingerprint === undefined
      ? await judged()
      : await checkLimited(
          ports.failedAuth,
          portalFailures(repos.console.signInFailures),
          { username: attempt.login, address: attempt.address, now: now.getTime(), tooMany: LOGIN_FAILED },
          async () => {
            const result = await judged();
            if ('refused' in result) {
              ports.portalLogins.failed(attempt.login);
              deny(ports, attempt, result.refused, now);
              return null;
            }
            return result;
          },
        );
  if (outcome === null) throw new PortalLoginRefused(false);
  if ('refused' in outcome) {
    deny(ports, attempt, outcome.refused, now);
    throw new PortalLoginRefused(false);
  }

  return admit(ports, outcome.user, outcome.subscriberId, attempt);
}

/**
 * The rest of the login check, after the credentials: the user's connection limit, quotas,
 * destinations and permissions, as they are now. A browser session, whose credentials were checked
 * when it opened, goes through it on every request: a user disabled or over a limit meanwhile is
 * refused at once.
 */
export async function admit(
  ports: Ports,
  user: IncomingUser,
  subscriberId: number | null,
  attempt: Pick<PortalLoginAttempt, 'login' | 'address' | 'protocol'>,
  /**
   * False for a session already in, checked again while it lasts (SFTP): its own transfers are among
   * those counted, and its limits are judged as each transfer starts (startPortalTransfer, the upload's
   * allowance, checkDownloadQuota) rather than on every request.
   */
  limits = true,
): Promise<PortalIdentity> {
  const now = ports.clock();
  const { repos } = ports;
  const { options, destinations, permissions, connections } = await repos.portal.admission(user.id, now);
  const settings = portalSettings(options);
  const [spent, subscriberActive] = await Promise.all([
    limits ? quotasSpent(ports, user.id, settings, now) : { upload: false, download: false },
    // A session opened by a subscriber's password lasts while that subscriber is active.
    subscriberId === null ? true : repos.portal.subscriber(subscriberId).then((s) => s?.status === 'active'),
  ]);
  const decision = checkLogin({
    user,
    userPasswordMatches: true,
    subscriberPasswordMatches: subscriberActive,
    excludedProtocol: settings.excludeProtocols.includes(attempt.protocol) ? attempt.protocol : null,
    connections,
    maxConnections: limits ? settings.maxConnections : -1,
    uploadQuotaSpent: spent.upload,
    downloadQuotaSpent: spent.download,
    destinations: destinations.length,
    permissions: permissions.length,
  });
  if (!decision.ok) {
    deny(ports, attempt, decision.reason, now);
    throw new PortalLoginRefused(decision.overLimit === true);
  }
  if (user.lastLoginDate === null || now.getTime() - user.lastLoginDate.getTime() >= RECORD_LOGIN_EVERY_MS) {
    await repos.portal.recordLogin(user.id, now, attempt.address);
  }
  return {
    userId: user.id,
    subscriberId,
    mode: decision.mode,
    country: user.iso,
    destinations,
    permissions,
    settings,
    credential: credentialFingerprint(user),
  };
}

const emptyFacts: LoginFacts = {
  user: null,
  userPasswordMatches: false,
  subscriberPasswordMatches: false,
  connections: 0,
  maxConnections: -1,
  uploadQuotaSpent: false,
  downloadQuotaSpent: false,
  destinations: 1,
  permissions: 1,
};

async function userPasswordIs(
  ports: Ports,
  sealed: string | null,
  given: Pick<PortalLoginAttempt, 'password' | 'proof'>,
) {
  if (sealed === null || (given.password === null && given.proof === undefined)) return false;
  const stored = await ports.secrets.decrypt(sealed).catch(() => null);
  if (stored === null) return false;
  if (given.proof !== undefined) return given.proof(stored);
  return given.password !== null && constantTimeEqualText(stored, given.password);
}

/**
 * Refuses a download (PortalLoginRefused over its limit, with its DEA line) when the user's download
 * quota is spent: for a session that stays logged in, whose login judged it once.
 */
export async function checkDownloadQuota(
  ports: Ports,
  identity: PortalIdentity,
  attempt: Pick<PortalLoginAttempt, 'login' | 'address' | 'protocol'>,
) {
  if (identity.settings.download === null) return;
  const now = ports.clock();
  if (!(await quotasSpent(ports, identity.userId, identity.settings, now)).download) return;
  deny(ports, attempt, 'Download quota exceeded', now);
  throw new PortalLoginRefused(true);
}

/** Whether the user's rolling download and upload quotas are spent now. */
export async function quotasSpent(ports: Ports, userId: string, settings: PortalSettings, now: Date) {
  const spentOf = async (quota: PortalSettings['download'], kind: 'downloadBytes' | 'uploadBytes') => {
    if (quota === null) return false;
    const traffic = await ports.repos.portal.trafficSince(userId, new Date(now.getTime() - quota.periodMs));
    return traffic[kind] >= quota.maxBytes;
  };
  const [download, upload] = await Promise.all([
    spentOf(settings.download, 'downloadBytes'),
    spentOf(settings.upload, 'uploadBytes'),
  ]);
  return { download, upload };
}

function deny(
  ports: Ports,
  attempt: Pick<PortalLoginAttempt, 'login' | 'address' | 'protocol'>,
  reason: string,
  at: Date,
) {
  ports.events.write(
    deaEvent({ at, userId: attempt.login, message: reason, context: `${attempt.protocol}:${attempt.address}` }),
  );
}
