import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32 } from '../core/common/crc32.ts';

describe('crc32', () => {
  it('gives the check value of CRC-32/ISO-HDLC', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
  });

  it("is zlib's, for any bytes, continued from any earlier CRC", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), fc.nat({ max: 0xffffffff }), (bytes, previous) => {
        expect(crc32(bytes)).toBe(zlib.crc32(bytes));
        expect(crc32(bytes, previous)).toBe(zlib.crc32(bytes, previous));
      }),
      { numRuns: 2000 },
    );
  });

  it('is the same over a whole and over its pieces, however cut and wherever they start', () => {
    for (let run = 0; run < 20; run++) {
      const bytes = new Uint8Array(randomBytes(1 + Math.floor(Math.random() * 200_000)));
      let crc = 0;
      for (let at = 0; at < bytes.length; ) {
        const length = 1 + Math.floor(Math.random() * 9_000);
        crc = crc32(bytes.subarray(at, at + length), crc);
        at += length;
      }
      expect(crc).toBe(zlib.crc32(bytes));
    }
  });
});
