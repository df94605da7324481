import { sha256 } from '@noble/hashes/sha2.js';
import { checkLimited } from '../api-clients/auth-throttle.ts';
import { generatePassword, generateSecret, hashPassword, verifySecretHash } from '../common/crypto.ts';
import { bytesToBase64Url, utf8 } from '../common/encoding.ts';
import { invalid } from '../common/errors.ts';
import type { Hashing } from '../common/hashing.ts';
import type { Ports } from '../ports.ts';
import { audited, recordIn } from './audit.ts';

export const IDLE_MS = 30 * 60_000;
const TOUCH_AFTER_MS = 60_000;
const TOO_MANY = 'Too many failed logins; try again later';

const tokenHash = (token: string) => bytesToBase64Url(sha256(utf8(token)));
// Compared against when the username is unknown, so a miss costs as much as a wrong password.
let dummyHash: Promise<string> | null = null;
const dummyHashOf = (hashing: Hashing) => (dummyHash ??= hashPassword(hashing, 'no such user'));

export interface ConsoleUser {
  userId: string;
  csrf: string;
  /** Holds at least one category with console access. */
  canAdminister: boolean;
}

/**
 * Checks a web user's password against its slow hash, under the same failed-authentication rules
 * as the API (checkLimited; the failures are kept in the database), and opens a session, ending
 * the user's older ones.
 */
export async function login(ports: Ports, input: { username: string; password: string; address: string }) {
  const now = ports.clock();
  const attempt = { username: input.username, address: input.address, now: now.getTime(), tooMany: TOO_MANY };
  const user = await checkLimited(ports.failedAuth, ports.repos.console.signInFailures, attempt, async () => {
    const found = await ports.repos.webUsers.find(input.username);
    const matches = await verifySecretHash(
      ports.hashing,
      found?.passwordHash ?? (await dummyHashOf(ports.hashing)),
      input.password,
    );
    return found?.active && matches ? found : null;
  });
  if (!user) throw invalid('Invalid username or password');
  const token = generateSecret();
  const csrf = generateSecret();
  // One transaction with its audit row; a sign-in ends the user's older sessions, so a cookie
  // left on another machine stops working.
  await ports.repos.transaction(async (repos) => {
    await repos.console.endSessionsOf(user.id);
    await repos.console.createSession(tokenHash(token), { userId: user.id, csrf, lastSeenAt: now });
    await recordIn(repos, now, { actor: user.id, action: 'login', targetKind: 'web user', target: user.id });
  });
  return { token, userId: user.id };
}

/** The session of a cookie token, or null when unknown, idle too long, or its user is inactive. */
export async function currentUser(ports: Ports, token: string): Promise<ConsoleUser | null> {
  const hash = tokenHash(token);
  const session = await ports.repos.console.session(hash);
  if (!session) return null;
  const now = ports.clock();
  const idle = now.getTime() - session.lastSeenAt.getTime();
  if (idle > IDLE_MS) {
    await ports.repos.console.deleteSession(hash);
    return null;
  }
  const user = await ports.repos.webUsers.find(session.userId);
  if (!user?.active) return null;
  if (idle > TOUCH_AFTER_MS) await ports.repos.console.touchSession(hash, now);
  const [granted, categories] = await Promise.all([
    ports.repos.console.categoriesOf(user.id),
    ports.repos.console.categories(),
  ]);
  const withAccess = new Set(categories.filter((c) => c.consoleAccess).map((c) => c.id));
  return { userId: user.id, csrf: session.csrf, canAdminister: granted.some((c) => withAccess.has(c)) };
}

export async function logout(ports: Ports, token: string) {
  await ports.repos.console.deleteSession(tokenHash(token));
}

/** First start: a console administrator whose generated password is printed once. */
export async function bootstrapWebAdmin(ports: Ports): Promise<string | null> {
  if ((await ports.repos.console.webUsers()).length > 0) return null;
  const password = generatePassword();
  const inserted = await ports.repos.webUsers.insert(
    {
      id: 'admin',
      name: 'Administrator',
      active: true,
      passwordSealed: await ports.secrets.encrypt(password),
      passwordHash: await hashPassword(ports.hashing, password),
    },
    ports.clock(),
  );
  if (!inserted) return null;
  await ports.repos.console.grant('admin', 'administrator');
  return password;
}

/** Assigns or removes an ACL category (console and `ecpds-edge webuser grant|revoke`). */
export async function setCategory(ports: Ports, actor: string, userId: string, category: string, granted: boolean) {
  if (!(await ports.repos.webUsers.find(userId))) throw invalid(`User ${userId} not found`);
  if (!(await ports.repos.console.categories()).some((c) => c.id === category))
    throw invalid(`Category ${category} not found`);
  const action = granted ? 'grant category' : 'revoke category';
  await audited(ports, { actor, action, targetKind: 'web user', target: userId, detail: category }, async (repos) => {
    if (granted) await repos.console.grant(userId, category);
    else if (!(await repos.console.revoke(userId, category))) {
      throw invalid(`User ${userId} does not hold category ${category}`);
    }
  });
}

/** Whether the user still holds a category with console access once `without` is removed. */
export async function keepsConsoleAccess(ports: Ports, userId: string, without: string) {
  const withAccess = new Set((await ports.repos.console.categories()).filter((c) => c.consoleAccess).map((c) => c.id));
  return (
    !withAccess.has(without) ||
    (await ports.repos.console.categoriesOf(userId)).some((c) => c !== without && withAccess.has(c))
  );
}

export async function setActive(ports: Ports, actor: string, userId: string, active: boolean) {
  if (!(await ports.repos.webUsers.find(userId))) throw invalid(`User ${userId} not found`);
  const action = active ? 'activate' : 'deactivate';
  await audited(ports, { actor, action, targetKind: 'web user', target: userId }, async (repos) => {
    await repos.webUsers.update(userId, { active }, ports.clock());
    // Ended rather than only refused while inactive, so activating again does not revive them.
    if (!active) await repos.console.endSessionsOf(userId);
  });
}
