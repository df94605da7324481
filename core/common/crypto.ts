import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { base64ToBytes, bytesToBase64, bytesToBase64Url, utf8 } from './encoding.ts';
import type { Hashing } from './hashing.ts';

export const randomBytes = (n: number) => crypto.getRandomValues(new Uint8Array(n));

/** A high-entropy secret for API clients: 32 random bytes, base64url. */
export const generateSecret = () => bytesToBase64Url(randomBytes(32));

/** A password a person can type: 18 characters from 62 letters and digits (about 107 bits). */
export function generatePassword(length = 18): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      // Bytes from 248 up would favour the first letters: drop them instead of wrapping.
      if (b < 248 && out.length < length) out += alphabet[b % 62];
    }
  }
  return out;
}

export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}

/** Two texts compared in constant time for their length (UTF-16 code units, as JavaScript holds them). */
export function constantTimeEqualText(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (i < a.length ? a.charCodeAt(i) : 0) ^ (i < b.length ? b.charCodeAt(i) : 0);
  return diff === 0;
}

/** A presented token (any form value) against the expected one, in constant time. */
export const tokenMatches = (presented: unknown, expected: string) =>
  typeof presented === 'string' && constantTimeEqualText(presented, expected);

// Changing these changes only new hashes: a stored one carries its own and is verified with them.
const SCRYPT = { N: 2 ** 14, r: 8, p: 1, dkLen: 32 };

/**
 * Stored secret hashes carry their scheme: `sha256$<hash>` for generated (high-entropy)
 * secrets, `scrypt$N$r$p$<salt>$<hash>` for passwords a person chose.
 */
const SHA256_PREFIX = 'sha256$';

export const hashGeneratedSecret = (secret: string) => `${SHA256_PREFIX}${sha256Base64(secret)}`;

/**
 * SHA-256 of a text's UTF-8 bytes, in base64: how generated secrets are stored. Every API request
 * runs it, on a few dozen bytes: in JavaScript that is a few microseconds, about two more than native
 * code, too little to take Hashing to each caller.
 */
export const sha256Base64 = (text: string) => bytesToBase64(sha256(utf8(text)));

/** A password a person chose, hashed with scrypt: slow on purpose, so `hashing` should be native. */
export async function hashPassword(hashing: Hashing, password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await hashing.scrypt(utf8(password), salt, SCRYPT);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${bytesToBase64(salt)}$${bytesToBase64(hash)}`;
}

export const isSlowHash = (stored: string) => stored.startsWith('scrypt$');

export async function verifySecretHash(hashing: Hashing, stored: string, presented: string): Promise<boolean> {
  // Base64 has no '$', so a stored value with more parts can never equal a digest.
  if (stored.startsWith(SHA256_PREFIX))
    return constantTimeEqualText(sha256Base64(presented), stored.slice(SHA256_PREFIX.length));
  const parts = stored.split('$');
  if (parts[0] === 'scrypt' && parts.length === 6) {
    const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
    const expected = base64ToBytes(hash);
    const actual = await hashing.scrypt(utf8(presented), base64ToBytes(salt), {
      N: Number(n),
      r: Number(r),
      p: Number(p),
      dkLen: expected.length,
    });
    return constantTimeEqual(actual, expected);
  }
  return false;
}

export const keyedHash = (key: Uint8Array, text: string) => bytesToBase64(hmac(sha256, key, utf8(text)));

/** AES-256-GCM for values the API must be able to return (user passwords, host passwords). */
export class SecretBox {
  private readonly key: ReturnType<typeof crypto.subtle.importKey>;
  private readonly raw: Uint8Array;

  constructor(rawKey: Uint8Array) {
    if (rawKey.length !== 32) throw new Error('the secret key must be 32 bytes');
    this.raw = rawKey.slice();
    this.key = crypto.subtle.importKey('raw', rawKey as Uint8Array<ArrayBuffer>, 'AES-GCM', false, [
      'encrypt',
      'decrypt',
    ]);
  }

  static fromBase64(text: string): SecretBox {
    return new SecretBox(base64ToBytes(text.trim()));
  }

  /** A secret for another purpose (e.g. signing cookies), derived so the key itself never leaves. */
  derive(purpose: string): string {
    return bytesToBase64(hmac(sha256, this.raw, utf8(`ecpds-edge:${purpose}`)));
  }

  async encrypt(plain: string): Promise<string> {
    const iv = randomBytes(12);
    const sealed = await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, await this.key, utf8(plain));
    return `v1:${bytesToBase64(iv)}:${bytesToBase64(new Uint8Array(sealed))}`;
  }

  async decrypt(sealed: string): Promise<string> {
    const [version, iv, data] = sealed.split(':');
    if (version !== 'v1' || !iv || !data) throw new Error('unreadable encrypted value');
    const plain = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: base64ToBytes(iv) as Uint8Array<ArrayBuffer> },
      await this.key,
      base64ToBytes(data) as Uint8Array<ArrayBuffer>,
    );
    return new TextDecoder().decode(plain);
  }
}
