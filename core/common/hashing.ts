import { md5 } from '@noble/hashes/legacy.js';
import { scryptAsync } from '@noble/hashes/scrypt.js';
import { sha256, sha512 } from '@noble/hashes/sha2.js';

/** The digests core takes of bytes: MD5 (delivered and stored files), SHA-512 (stored files), SHA-256. */
export type DigestAlgorithm = 'md5' | 'sha256' | 'sha512';

/** A digest fed chunk by chunk; `digest()` ends it. */
export interface IncrementalDigest {
  update(bytes: Uint8Array): void;
  digest(): Uint8Array;
}

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
  dkLen: number;
}

/**
 * The costly hashing core does: scrypt at every password sign-in, digests of every byte stored or
 * delivered. Pure JavaScript runs everywhere but is several times slower than a runtime's native
 * code (OpenSSL, BoringSSL), so a shell that has native code gives it here (see Ports.hashing).
 */
export interface Hashing {
  digest(algorithm: DigestAlgorithm): IncrementalDigest;
  scrypt(password: Uint8Array, salt: Uint8Array, params: ScryptParams): Promise<Uint8Array>;
}

const NOBLE = { md5, sha256, sha512 };

/** Hashing in JavaScript (@noble/hashes): for runtimes without native hashing. */
export const portableHashing: Hashing = {
  digest(algorithm) {
    const hash = NOBLE[algorithm].create();
    return {
      update(bytes) {
        hash.update(bytes);
      },
      digest: () => hash.digest(),
    };
  },
  scrypt: (password, salt, params) => scryptAsync(password, salt, params),
};

export function bytesToHex(bytes: Uint8Array): string {
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex;
}
