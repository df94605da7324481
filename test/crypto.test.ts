import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  constantTimeEqualText,
  generateSecret,
  hashGeneratedSecret,
  hashPassword,
  sha256Base64,
  tokenMatches,
  verifySecretHash,
} from '../core/common/crypto.ts';
import { portableHashing } from '../core/common/hashing.ts';
import { nodeHashing } from '../functions/node/hashing.ts';

describe('SHA-256 of generated secrets', () => {
  it('is the standard digest, for any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const expected = createHash('sha256').update(text, 'utf8').digest('base64');
        expect(sha256Base64(text)).toBe(expected);
      }),
      { numRuns: 500 },
    );
    expect(sha256Base64('')).toBe('47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=');
  });

  it('verifies a generated secret and refuses anything else', async () => {
    const secret = generateSecret();
    const stored = hashGeneratedSecret(secret);
    expect(await verifySecretHash(nodeHashing, stored, secret)).toBe(true);
    expect(await verifySecretHash(nodeHashing, stored, `${secret}x`)).toBe(false);
    expect(await verifySecretHash(nodeHashing, stored, '')).toBe(false);
    expect(await verifySecretHash(nodeHashing, `${stored}$extra`, secret)).toBe(false);
    expect(await verifySecretHash(nodeHashing, `sha256$`, secret)).toBe(false);
    expect(await verifySecretHash(nodeHashing, `plain$${secret}`, secret)).toBe(false);
  });
});

describe.each([
  ['in JavaScript', portableHashing],
  ['by node:crypto', nodeHashing],
])('scrypt hashes of passwords, %s', (_, hashing) => {
  it('verify the right password only, the stored parameters applied', async () => {
    const stored = await hashPassword(hashing, 'Correct horse 1');
    expect(stored).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/]+=*\$[A-Za-z0-9+/]+=*$/);
    expect(await verifySecretHash(hashing, stored, 'Correct horse 1')).toBe(true);
    expect(await verifySecretHash(hashing, stored, 'Correct horse 2')).toBe(false);
    expect(await hashPassword(hashing, 'Correct horse 1')).not.toBe(stored);
  });

  it('verify a hash with other parameters: RFC 7914, its third test vector', async () => {
    const salt = Buffer.from('SodiumChloride').toString('base64');
    const hash = Buffer.from(
      '7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2' +
        'd5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887',
      'hex',
    ).toString('base64');
    const stored = `scrypt$16384$8$1$${salt}$${hash}`;
    expect(await verifySecretHash(hashing, stored, 'pleaseletmein')).toBe(true);
    expect(await verifySecretHash(hashing, stored, 'pleaseletmeout')).toBe(false);
  });

  it('verify across implementations: what one stored, the other verifies', async () => {
    const other = hashing === nodeHashing ? portableHashing : nodeHashing;
    const stored = await hashPassword(other, 'Correct horse 1');
    expect(await verifySecretHash(hashing, stored, 'Correct horse 1')).toBe(true);
    expect(await verifySecretHash(hashing, stored, 'Correct horse 2')).toBe(false);
  });
});

describe('constantTimeEqualText', () => {
  it('is equality of texts', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        expect(constantTimeEqualText(a, b)).toBe(a === b);
        expect(constantTimeEqualText(a, a)).toBe(true);
      }),
    );
    expect(constantTimeEqualText('abc', 'abc\u0000')).toBe(false);
    expect(constantTimeEqualText('', '')).toBe(true);
    // Two different lone surrogates are different texts, though UTF-8 would encode both as U+FFFD.
    expect(constantTimeEqualText('\ud800', '\udc00')).toBe(false);
  });

  it('reads every character instead of stopping at the first difference', () => {
    let reads = 0;
    const counting = (text: string) =>
      Object.assign(new String(text), {
        charCodeAt(i: number) {
          reads++;
          return String.prototype.charCodeAt.call(this, i);
        },
      }) as unknown as string;
    constantTimeEqualText(counting('Xbcdefgh'), counting('abcdefgh'));
    const firstDiffers = reads;
    reads = 0;
    constantTimeEqualText(counting('abcdefgh'), counting('abcdefgh'));
    expect(firstDiffers).toBe(16);
    expect(reads).toBe(16);
  });

  it('serves form tokens, which must be text', () => {
    expect(tokenMatches('t0ken', 't0ken')).toBe(true);
    expect(tokenMatches('t0ken', 't0kem')).toBe(false);
    expect(tokenMatches(['t0ken'], 't0ken')).toBe(false);
    expect(tokenMatches(undefined, 't0ken')).toBe(false);
  });
});
