import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type DigestAlgorithm, type Hashing, portableHashing } from '../core/common/hashing.ts';
import { nodeHashing } from '../functions/node/hashing.ts';
import { nodeCryptoHashing, runtimeHashing } from '../functions/runtime-hashing.ts';

const ALGORITHMS: DigestAlgorithm[] = ['md5', 'sha256', 'sha512'];

function digestOf(hashing: Hashing, algorithm: DigestAlgorithm, chunks: Uint8Array[]) {
  const digest = hashing.digest(algorithm);
  for (const chunk of chunks) digest.update(chunk);
  return Buffer.from(digest.digest()).toString('hex');
}

describe.each([
  ['in JavaScript', portableHashing],
  ['by node:crypto', nodeHashing],
])('digests %s', (_, hashing) => {
  it("are node:crypto's, byte for byte, however the bytes are cut", () => {
    for (let run = 0; run < 20; run++) {
      const bytes = randomBytes(Math.floor(Math.random() * 300_000));
      const chunks: Uint8Array[] = [];
      for (let at = 0; at < bytes.length; ) {
        const length = 1 + Math.floor(Math.random() * 70_000);
        chunks.push(new Uint8Array(bytes.subarray(at, at + length)));
        at += length;
      }
      for (const algorithm of ALGORITHMS) {
        expect(digestOf(hashing, algorithm, chunks)).toBe(createHash(algorithm).update(bytes).digest('hex'));
      }
    }
    expect(digestOf(hashing, 'md5', [])).toBe('d41d8cd98f00b204e9800998ecf8427e');
  });
});

describe('runtimeHashing', () => {
  it("is node:crypto's where the runtime offers it", async () => {
    const hashing = runtimeHashing();
    expect(hashing).not.toBe(portableHashing);
    const salt = new Uint8Array(16);
    const params = { N: 1024, r: 8, p: 1, dkLen: 32 };
    const password = new TextEncoder().encode('pw');
    expect(await hashing.scrypt(password, salt, params)).toEqual(await portableHashing.scrypt(password, salt, params));
  });

  it('is JavaScript where the runtime has no node:crypto', () => {
    const process = globalThis.process;
    const getBuiltinModule = Object.getOwnPropertyDescriptor(process, 'getBuiltinModule');
    Object.defineProperty(process, 'getBuiltinModule', { value: undefined, configurable: true });
    try {
      expect(runtimeHashing()).toBe(portableHashing);
    } finally {
      if (getBuiltinModule) Object.defineProperty(process, 'getBuiltinModule', getBuiltinModule);
      else Reflect.deleteProperty(process, 'getBuiltinModule');
    }
  });

  it('answers plain byte arrays, not Buffers', () => {
    const digest = nodeCryptoHashing({ createHash, scrypt: () => undefined } as never).digest('md5');
    digest.update(new Uint8Array([1]));
    expect(Object.getPrototypeOf(digest.digest())).toBe(Uint8Array.prototype);
  });
});
