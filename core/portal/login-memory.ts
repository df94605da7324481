import { keyedHash } from '../common/crypto.ts';
import { type ExpiringCache, expiringCache } from '../common/expiring-cache.ts';
import type { PortalIdentity } from './access.ts';

/**
 * How long a successful portal login with credentials lets the same credentials in without being
 * checked again. Every HTTP request logs in, and a client fetching many files sends the same
 * credentials many times a second; in exchange, a user disabled or changed elsewhere (its password,
 * options, destinations, permissions) still gets in this long with what it had.
 */
export const REMEMBER_PORTAL_LOGIN_MS = 1000;
const LOGINS_REMEMBERED = 10_000;

/** What one login with credentials presents: all of it makes the key of a remembered success. */
export interface PresentedLogin {
  login: string;
  password: string;
  address: string;
  protocol: string;
}

interface Remembered {
  key: string;
  identity: PortalIdentity;
  /** When the check that let it in began: the facts it judged are at least that old. */
  at: number;
}

/**
 * Successful portal logins of this process, for REMEMBER_PORTAL_LOGIN_MS from their check: the
 * identity they were given, under a keyed hash of the login, the address, the protocol and the
 * password (the password itself is never kept). Only successes are remembered, and any failed
 * login of a user in this process drops what is remembered of it, so the failed-authentication
 * rules still judge a pair that failed meanwhile. Logins of the same credentials that arrive
 * while one is being checked wait for its answer instead of each checking them again; when it is
 * a refusal, each is checked on its own (and counted, if wrong).
 */
export class PortalLoginMemory {
  /** Per user (its login in lower case, as the failed-authentication rules count it). */
  private readonly remembered: ExpiringCache<Remembered[]>;
  private readonly checking = new Map<string, Promise<PortalIdentity | null>>();
  /** Counts the failed logins and changes seen: a check that saw one meanwhile remembers nothing. */
  private forgotten = 0;
  /** Per user, the value of `forgotten` at its last failed login or change (see `changedSince`). */
  private readonly lastChange = new Map<string, number>();

  constructor(
    private readonly hashKey: Uint8Array,
    private readonly rememberMs = REMEMBER_PORTAL_LOGIN_MS,
  ) {
    this.remembered = expiringCache<Remembered[]>(LOGINS_REMEMBERED, rememberMs);
  }

  /** The identity a check of these credentials gave within the last REMEMBER_PORTAL_LOGIN_MS, or null. */
  recall(presented: PresentedLogin, now: number): PortalIdentity | null {
    const key = this.keyOf(presented);
    const found = this.remembered.get(userKey(presented.login), now)?.find((r) => r.key === key);
    return found !== undefined && now - found.at < this.rememberMs ? found.identity : null;
  }

  /** The answer of a check of these same credentials under way, once it comes: null when it refused. */
  underWay(presented: PresentedLogin): Promise<PortalIdentity | null> | null {
    return this.checking.get(this.keyOf(presented)) ?? null;
  }

  /**
   * Runs `check` of these credentials (the full login check) and remembers the identity it gives,
   * unless a login of the same user failed while it ran. A refusal is thrown as `check` threw it.
   */
  async check(presented: PresentedLogin, now: number, check: () => Promise<PortalIdentity>): Promise<PortalIdentity> {
    const key = this.keyOf(presented);
    const user = userKey(presented.login);
    const forgottenBefore = this.forgotten;
    const running = check();
    const answer = running.then(
      (identity) => identity,
      () => null,
    );
    this.checking.set(key, answer);
    try {
      const identity = await running;
      if (this.forgotten === forgottenBefore) {
        const others = (this.remembered.get(user, now) ?? []).filter(
          (r) => r.key !== key && now - r.at < this.rememberMs,
        );
        this.remembered.set(user, [...others, { key, identity, at: now }], now);
      }
      return identity;
    } finally {
      if (this.checking.get(key) === answer) this.checking.delete(key);
    }
  }

  /** A login of this user failed (wrong credentials, or refused): nothing of it is remembered any more. */
  failed(login: string) {
    this.forget(login);
  }

  /**
   * The user was changed here (its account, destinations, permissions, options or subscribers):
   * its next request is checked as it is now, and a check under way is not remembered.
   */
  forget(login: string) {
    this.forgotten++;
    this.lastChange.set(userKey(login), this.forgotten);
    this.remembered.delete(userKey(login));
  }

  /** A mark of now, for `changedSince`. */
  mark(): number {
    return this.forgotten;
  }

  /**
   * Whether the user was changed here (or failed to log in) after `mark`: a session that stays logged
   * in (SFTP) checks its user again at its next request rather than after its usual interval.
   */
  changedSince(login: string, mark: number): boolean {
    return (this.lastChange.get(userKey(login)) ?? 0) > mark;
  }

  private keyOf({ login, password, address, protocol }: PresentedLogin) {
    // Length-prefixed: no field can end where the next begins.
    const fields = [login, address, protocol, password].map((f) => `${f.length}:${f}`).join('');
    return keyedHash(this.hashKey, fields);
  }
}

const userKey = (login: string) => login.toLowerCase();
