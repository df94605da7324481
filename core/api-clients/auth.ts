import { SHOW_SENSITIVE_INFO } from '../catalogue.ts';
import { hashGeneratedSecret, isSlowHash, keyedHash, verifySecretHash } from '../common/crypto.ts';
import { decodeStrictBase64 } from '../common/encoding.ts';
import { unauthorized } from '../common/errors.ts';
import { expiringCache } from '../common/expiring-cache.ts';
import type { Caller, Ports } from '../ports.ts';
import { checkLimited } from './auth-throttle.ts';
import { grants } from './permissions.ts';
import type { ApiClient, CredentialCache } from './ports.ts';

export interface Credentials {
  username: string;
  secret: string;
}

/** `Basic <base64(username:secret)>`, scheme case-insensitive, split at the first colon. */
export function parseBasicAuthorization(header: string | undefined | null): Credentials | null {
  const match = /^basic +(\S+)\s*$/i.exec(header ?? '');
  if (!match) return null;
  const decoded = decodeStrictBase64(match[1]!);
  if (decoded === null) return null;
  const colon = decoded.indexOf(':');
  if (colon <= 0) return null;
  return { username: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

const CACHE_TTL_MS = 5 * 60_000;
const CACHE_LIMIT = 10_000;
/**
 * How long a client record read for one request serves the next ones. Changes made in this
 * process take effect at once (forgetClient); changes made elsewhere (the CLI, another server)
 * within this time. Without it every request would start with a query.
 */
export const CLIENT_RECORD_TTL_MS = 1000;
// Last-used times are written at most this often per client, never on every call.
const TOUCH_EVERY_MS = 60_000;

export function createCredentialCache(hashKey: Uint8Array): CredentialCache {
  // Beyond CACHE_LIMIT entries the least recently used go, instead of all of them at once.
  const verified = expiringCache<true>(CACHE_LIMIT, CACHE_TTL_MS);
  const touched = expiringCache<true>(CACHE_LIMIT, TOUCH_EVERY_MS);
  const records = expiringCache<ApiClient>(CACHE_LIMIT, CLIENT_RECORD_TTL_MS);
  return {
    hashKey,
    client: (username, now) => records.get(username, now) ?? null,
    rememberClient: (client, now) => records.set(client.username, client, now),
    forgetClient: (username) => records.delete(username),
    shouldTouch(username, now) {
      if (touched.get(username, now)) return false;
      touched.set(username, true, now);
      return true;
    },
    has: (key, now) => verified.get(key, now) === true,
    add: (key, now) => verified.set(key, true, now),
  };
}

/** Unknown usernames are not remembered, so a client created elsewhere works at once. */
async function clientRecord(ports: Ports, username: string, now: number): Promise<ApiClient | null> {
  const cached = ports.credentialCache.client(username, now);
  if (cached) return cached;
  const client = await ports.repos.clients.find(username);
  if (client) ports.credentialCache.rememberClient(client, now);
  return client;
}

const TOO_MANY = 'Too many failed authentications; try again later';

// A hash to compare against when the username is unknown, so the answer takes as long.
const NO_CLIENT_HASH = hashGeneratedSecret('no such client');

/**
 * Slow (scrypt) hashes are verified once, then remembered under a keyed hash of the
 * presented credential and the stored hash, so a change of secret drops the entry.
 */
async function secretMatches(ports: Ports, client: ApiClient, secret: string, now: number) {
  const { credentialCache: cache, hashing } = ports;
  if (!isSlowHash(client.secretHash)) return verifySecretHash(hashing, client.secretHash, secret);
  const key = keyedHash(cache.hashKey, `${client.username}\u0000${secret}\u0000${client.secretHash}`);
  if (cache.has(key, now)) return true;
  const ok = await verifySecretHash(hashing, client.secretHash, secret);
  if (ok) cache.add(key, now);
  return ok;
}

/**
 * Checks credentials and, when `service` is given, that one permission expression matches it.
 * Every failure gives the same answer, so the caller learns nothing about which check failed.
 * `address` is the client's address as the shell sees it, for the failed-authentication rules.
 */
export async function authenticate(
  ports: Ports,
  credentials: Credentials,
  service: string | null,
  address?: string,
): Promise<Caller> {
  const now = ports.clock().getTime();
  const { username, secret } = credentials;
  const attempt = { username, address, now, tooMany: TOO_MANY };
  const client = await checkLimited(ports.failedAuth, ports.failedAuth.apiLog, attempt, async () => {
    // No stored name can hold U+0000 (Postgres text cannot), and the query would fail on it.
    const found = username.includes('\u0000') ? null : await clientRecord(ports, username, now);
    if (!found) {
      await verifySecretHash(ports.hashing, NO_CLIENT_HASH, secret);
      return null;
    }
    return (await secretMatches(ports, found, secret, now)) ? found : null;
  });
  if (!client) throw unauthorized();
  // A missing permission is not counted: the secret was right, so nothing is being guessed,
  // and a Basic-only endpoint would tell a right guess apart anyway.
  if (service !== null && !grants(client.permissions, service)) throw unauthorized();
  if (ports.credentialCache.shouldTouch(client.username, now)) {
    ports.waitUntil(ports.repos.clients.touch(client.username, new Date(now)).catch(() => undefined));
  }
  return { username: client.username, showSensitiveInfo: grants(client.permissions, SHOW_SENSITIVE_INFO) };
}
