import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../functions/node/config.ts';
import { workerConfig } from '../../../functions/workers/runtime.ts';

/** ECPDS_PORTAL_S3_DOMAIN: the S3 endpoint's virtual-host style, on Node and Workers alike. */
describe('ECPDS_PORTAL_S3_DOMAIN', () => {
  it('is a DNS name, kept in lower case; unset or empty, path style only', () => {
    expect(parseConfig({ ECPDS_PORTAL_S3_DOMAIN: 'S3.Example.org' }).portal.s3Domain).toBe('s3.example.org');
    expect(parseConfig({}).portal.s3Domain).toBeNull();
    expect(parseConfig({ ECPDS_PORTAL_S3_DOMAIN: '' }).portal.s3Domain).toBeNull();
  });

  it('refuses what is no DNS name, by name', () => {
    for (const wrong of ['https://s3.example.org', 's3.example.org/portal', '-s3.example.org', 'a..b']) {
      expect(() => parseConfig({ ECPDS_PORTAL_S3_DOMAIN: wrong }), wrong).toThrow(/ECPDS_PORTAL_S3_DOMAIN/);
    }
  });

  it("is read by the Worker's configuration too", () => {
    const config = workerConfig({
      ECPDS_SECRET_KEY: Buffer.alloc(32).toString('base64'),
      ECPDS_PORTAL_S3_DOMAIN: 's3.example.org',
    } as never);
    expect(config.ECPDS_PORTAL_S3_DOMAIN).toBe('s3.example.org');
  });
});

describe("ECPDS_PORTAL_S3_*: the multipart uploads' limits", () => {
  it("default to S3's own bounds, 100 uploads open per user, aborted after 24 hours", () => {
    expect(parseConfig({}).portal.multipart).toEqual({
      maxParts: 10_000,
      maxPartBytes: 5 * 1024 ** 3,
      maxOpenUploads: 100,
      staleAfterMs: 24 * 3600_000,
    });
    const set = parseConfig({
      ECPDS_PORTAL_S3_MAX_PARTS: '100',
      ECPDS_PORTAL_S3_MAX_PART_MIB: '64',
      ECPDS_PORTAL_S3_MAX_OPEN_UPLOADS: '5',
      ECPDS_PORTAL_S3_UPLOAD_HOURS: '2',
    });
    expect(set.portal.multipart).toEqual({
      maxParts: 100,
      maxPartBytes: 64 * 1024 * 1024,
      maxOpenUploads: 5,
      staleAfterMs: 2 * 3600_000,
    });
  });

  it("refuses what goes past S3's bounds, by name", () => {
    expect(() => parseConfig({ ECPDS_PORTAL_S3_MAX_PARTS: '10001' })).toThrow(/ECPDS_PORTAL_S3_MAX_PARTS/);
    expect(() => parseConfig({ ECPDS_PORTAL_S3_MAX_PART_MIB: '6000' })).toThrow(/ECPDS_PORTAL_S3_MAX_PART_MIB/);
  });
});

describe("ECPDS_PORTAL_S3_PORT: the S3 listener's port", () => {
  it('is 9443 by default, 0 for none, a port otherwise; anything else is refused by name', () => {
    expect(parseConfig({}).portal.s3Port).toBe(9443);
    expect(parseConfig({ ECPDS_PORTAL_S3_PORT: '0' }).portal.s3Port).toBeNull();
    expect(parseConfig({ ECPDS_PORTAL_S3_PORT: '19443' }).portal.s3Port).toBe(19443);
    for (const wrong of ['65536', '-1', 'https']) {
      expect(() => parseConfig({ ECPDS_PORTAL_S3_PORT: wrong }), wrong).toThrow(/ECPDS_PORTAL_S3_PORT/);
    }
  });
});
