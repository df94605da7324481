import type { createHash, scrypt } from 'node:crypto';
import { type Hashing, portableHashing } from '../core/common/hashing.ts';

/** What is taken of node:crypto, which Node, Bun, Deno and Workers (with nodejs_compat) all offer. */
export interface NodeCrypto {
  createHash: typeof createHash;
  scrypt: typeof scrypt;
}

/** Hashing by a runtime's node:crypto: native code, and scrypt off the thread that serves requests. */
export function nodeCryptoHashing(crypto: NodeCrypto): Hashing {
  return {
    digest(algorithm) {
      const hash = crypto.createHash(algorithm);
      return {
        update(bytes) {
          hash.update(bytes);
        },
        digest() {
          const out = hash.digest();
          return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
        },
      };
    },
    scrypt: (password, salt, { N, r, p, dkLen }) =>
      new Promise((resolve, reject) =>
        // Node refuses above 32 MiB by default; what a stored hash names is allowed, with room to spare.
        crypto.scrypt(password, salt, dkLen, { N, r, p, maxmem: 256 * N * r + (1 << 20) }, (error, key) =>
          error ? reject(error) : resolve(new Uint8Array(key.buffer, key.byteOffset, key.byteLength)),
        ),
      ),
  };
}

/**
 * node:crypto where the runtime has it, asked for at run time so that a runtime without it (Workers
 * without nodejs_compat, a browser) still loads this module; hashing in JavaScript there.
 */
export function runtimeHashing(): Hashing {
  const runtime = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const crypto = runtime?.getBuiltinModule?.('node:crypto') as Partial<NodeCrypto> | undefined;
  return crypto?.createHash && crypto.scrypt ? nodeCryptoHashing(crypto as NodeCrypto) : portableHashing;
}
