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
