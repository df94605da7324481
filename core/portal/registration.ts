import { generatePassword, generateSecret, sha256Base64 } from '../common/crypto.ts';
import { conflict, invalid, messageOf, notFound, unavailable } from '../common/errors.ts';
import { type AuditedChange, audited } from '../console/audit.ts';
import type { Ports, Repositories } from '../ports.ts';
import { portalMode } from './login.ts';
import { portalSettings } from './options.ts';
import type { Subscriber } from './ports.ts';
import { acceptableName, countRegistration, NAME_EXPECTED, type RegistrationLimits } from './registration-rules.ts';

/**
 * Self-service registration: a visitor registers to a self-service user with a name, an e-mail
 * and a country; a single-use link mailed to that address verifies it within 24 hours; a verified
 * subscriber is activated at once (`portal.registrationAutoApprove`) or by an operator, and gets a
 * generated password by e-mail. Tokens and passwords are 256-bit and 143-bit random values from
 * the cryptographic generator, stored only as SHA-256 hashes.
 */

export const TOKEN_LIFETIME_MS = 24 * 3600_000;
const PASSWORD_LENGTH = 24;
const NOT_OPEN = 'Registration is not open for this user';
/** One plain address: no display name or list, which a mailer's address parser would read as other recipients. */
const PLAIN_ADDRESS = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;
const LINK_INVALID = 'This verification link is not valid: it was used already, or it has expired';

export interface Registration {
  userId: string;
  name: string;
  email: string;
  iso: string;
}

/** Where a registration comes from, as the shell knows it. */
export interface RegistrationContext {
  /**
   * The portal's public address as configured (`https://host[:port][/prefix]`, ECPDS_PORTAL_URL),
   * the start of the links in e-mails: never the request's Host, which the visitor chooses.
   */
  origin: string;
  /** The client's address, for the limit of registrations per address. */
  address: string;
  limits: RegistrationLimits;
}

function mailerOf(ports: Ports) {
  if (ports.mailer === null) throw unavailable('registration by e-mail is not configured on this server');
  return ports.mailer;
}

export async function register(ports: Ports, input: Registration, context: RegistrationContext): Promise<void> {
  const mailer = mailerOf(ports);
  const name = acceptableName(input.name);
  const email = input.email.trim();
  if (name === null) throw invalid(NAME_EXPECTED);
  if (!PLAIN_ADDRESS.test(email) || email.length > 254) throw invalid('An e-mail address expected');
  if (!(await ports.repos.countries.exists(input.iso))) throw invalid('A country from the list expected');
  const user = await ports.repos.incomingUsers.find(input.userId);
  // One answer whether the user is missing, inactive or of another mode: none tells which users exist.
  if (!user?.active || portalMode(user.portalService) !== 'self-service') throw invalid(NOT_OPEN);

  const now = ports.clock();
  const token = generateSecret();
  const add = () =>
    ports.repos.portal.addSubscriber(
      {
        userId: user.id,
        name,
        email,
        iso: input.iso,
        tokenHash: sha256Base64(token),
        tokenExpiresAt: new Date(now.getTime() + TOKEN_LIFETIME_MS),
      },
      now,
    );
  let id = await add();
  if (id === null && (await forgetLapsedRegistration(ports, user.id, email, now))) id = await add();
  if (id === null) throw conflict('This e-mail address is already registered');
  const subscriberId = id;
  // Counted once the registration is stored: one refused as already registered sends nothing.
  await countRegistration(ports.repos.console.signInFailures, context.limits, {
    address: context.address,
    email,
    now: now.getTime(),
  }).catch(async (e: unknown) => {
    await ports.repos.portal.deleteSubscriber(subscriberId);
    throw e;
  });
  const link = `${context.origin}/portal/verify?token=${encodeURIComponent(token)}`;
  try {
    await mailer.send({
      to: email,
      subject: `Confirm your registration to ${user.id}`,
      text:
        `Hello ${name},\n\nTo confirm your registration to the data portal of ${user.id}, open this link ` +
        `within 24 hours and confirm there:\n\n${link}\n\nIf you did not register, ignore this message.\n`,
    });
  } catch (e) {
    // Nobody got the link: the address may register again.
    await ports.repos.portal.deleteSubscriber(id);
    ports.logger.warn('could not mail a portal verification link', { user: user.id, reason: messageOf(e) });
    throw unavailable('the verification e-mail could not be sent; try again later');
  }
}

/**
 * Removes the registration of this address that was never verified and whose link has expired:
 * otherwise an address whose link lapsed (or that someone else registered, and nobody confirmed)
 * could never register again. True when there was one.
 */
async function forgetLapsedRegistration(ports: Ports, userId: string, email: string, now: Date) {
  const lapsed = (await ports.repos.portal.subscribers(userId)).find(
    (s) =>
      s.email.toLowerCase() === email.toLowerCase() &&
      s.status === 'unverified' &&
      (s.tokenExpiresAt === null || s.tokenExpiresAt.getTime() <= now.getTime()),
  );
  if (lapsed === undefined) return false;
  await ports.repos.portal.deleteSubscriber(lapsed.id);
  return true;
}

/** Whether a verification token is one still waiting to be used (nothing changes). */
export async function verificationPending(ports: Ports, token: string): Promise<boolean> {
  const subscriber = await ports.repos.portal.subscriberByToken(sha256Base64(token));
  return (
    subscriber?.status === 'unverified' &&
    subscriber.tokenExpiresAt !== null &&
    subscriber.tokenExpiresAt.getTime() > ports.clock().getTime()
  );
}

/** Uses a verification token: the subscriber is activated (and mailed its password) or waits for approval. */
export async function verify(ports: Ports, token: string): Promise<'activated' | 'awaiting approval'> {
  const now = ports.clock();
  const subscriber = await ports.repos.portal.subscriberByToken(sha256Base64(token));
  if (subscriber === null || subscriber.status !== 'unverified') throw invalid(LINK_INVALID);
  if (subscriber.tokenExpiresAt === null || subscriber.tokenExpiresAt.getTime() <= now.getTime()) {
    throw invalid(LINK_INVALID);
  }
  const settings = portalSettings(await ports.repos.portal.options(subscriber.userId));
  if (settings.registrationAutoApprove) {
    await activate(ports, subscriber, ['unverified']);
    return 'activated';
  }
  const changed = await ports.repos.portal.changeSubscriber(subscriber.id, ['unverified'], {
    status: 'verified',
    at: now,
    clearToken: true,
  });
  if (!changed) throw invalid(LINK_INVALID);
  ports.logger.info('a portal subscriber waits for approval', { user: subscriber.userId, subscriber: subscriber.id });
  return 'awaiting approval';
}

/**
 * An operator's approval of a verified subscriber: activated, and mailed its password. `audit`
 * is written in the transaction of the activation (and of its undoing when the mail fails).
 */
export async function approveSubscriber(ports: Ports, id: number, audit?: AuditedChange): Promise<Subscriber> {
  const subscriber = await ports.repos.portal.subscriber(id);
  if (subscriber === null) throw notFound(`Subscriber ${id} not found`);
  if (subscriber.status !== 'verified') {
    throw invalid(`Subscriber ${id} is ${subscriber.status}: only a verified subscriber can be approved`);
  }
  await activate(ports, subscriber, ['verified'], audit);
  return { ...subscriber, status: 'active' };
}

/** Ends a subscriber's access: its password opens nothing any more, its browser sessions end. */
export async function revokeSubscriber(ports: Ports, id: number): Promise<void> {
  const subscriber = await ports.repos.portal.subscriber(id);
  if (subscriber === null) throw notFound(`Subscriber ${id} not found`);
  const changed = await ports.repos.portal.changeSubscriber(id, ['unverified', 'verified', 'active'], {
    status: 'revoked',
    at: ports.clock(),
    clearToken: true,
  });
  if (!changed) throw invalid(`Subscriber ${id} is already revoked`);
}

/** Runs a change alone, or with its audit row in one transaction. */
const change = <T>(ports: Ports, audit: AuditedChange | undefined, work: (repos: Repositories) => Promise<T>) =>
  audit ? audited(ports, audit, work) : work(ports.repos);

async function activate(ports: Ports, subscriber: Subscriber, from: Subscriber['status'][], audit?: AuditedChange) {
  const mailer = mailerOf(ports);
  const password = generatePassword(PASSWORD_LENGTH);
  const now = ports.clock();
  // The mail is sent after the commit: on the embedded database a transaction held open over an
  // SMTP exchange would stop every other request.
  await change(ports, audit, async (repos) => {
    const changed = await repos.portal.changeSubscriber(subscriber.id, from, {
      status: 'active',
      at: now,
      passwordHash: sha256Base64(password),
      clearToken: true,
    });
    // Thrown inside the transaction: the audit row of a change that did not happen is not kept.
    if (!changed && from.includes('unverified')) throw invalid(LINK_INVALID);
    if (!changed) throw invalid(`Subscriber ${subscriber.id} is no longer ${from.join(' or ')}`);
  });
  try {
    await mailer.send({
      to: subscriber.email,
      subject: `Your access to the data portal of ${subscriber.userId}`,
      text:
        `Hello ${subscriber.name},\n\nYour registration is complete. Log in to the data portal with\n\n` +
        `  login:    ${subscriber.userId}\n  password: ${password}\n\nKeep this password to yourself.\n`,
    });
  } catch (e) {
    // Nobody got the password: back to verified, for an operator to approve again.
    const undo = audit && { ...audit, action: `${audit.action} undone`, detail: 'the e-mail could not be sent' };
    await change(ports, undo, (repos) =>
      repos.portal.changeSubscriber(subscriber.id, ['active'], { status: 'verified', at: now }),
    );
    ports.logger.warn('could not mail a portal password', { user: subscriber.userId, reason: messageOf(e) });
    throw unavailable('the e-mail with the password could not be sent; the subscriber waits for approval');
  }
}
