import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostConnection } from '../../core/dissemination/methods.ts';
import { s3Method } from '../../functions/transfer-methods/s3.ts';
import { s3Object, s3Settings } from '../../functions/transfer-methods/s3-target.ts';
import { loopbackFetch } from '../support/servers/loopback-fetch.ts';
import { type S3TestServer, startS3 } from '../support/servers/s3.ts';
import { chunks, hostFor, md5, payload } from '../support/transfer.ts';

/**
 * Google Cloud Storage through the `s3` method: its XML API takes SigV4 requests signed with an
 * HMAC key (access id and secret as the host's login and password) at storage.googleapis.com,
 * bucket virtual-hosted. The test server stands for it: the requests reach it without DNS, with
 * the Host they were signed for, and it checks their signatures.
 */
const GCS_BUCKET = 'ecpds-gcs';
const GCS_OPTIONS = { 's3.url': 'https://storage.googleapis.com', 's3.region': 'auto', 's3.bucketName': GCS_BUCKET };

let s3: S3TestServer;
beforeAll(async () => {
  // Under a name that is not the server's own, s3rver reads the whole Host as the bucket.
  s3 = await startS3(`${GCS_BUCKET}.storage.googleapis.com`);
});
afterAll(async () => {
  await s3?.stop();
});

const gcsHost = (secret = 'S3RVER') =>
  hostFor('s3', { hostname: '', login: 'S3RVER', password: secret, directory: 'in' }, GCS_OPTIONS);
const send = (h: HostConnection, target: string, bytes: Uint8Array) =>
  s3Method({ fetch: loopbackFetch(s3.port) }).send(
    h,
    { target, size: bytes.byteLength },
    chunks(bytes),
    new AbortController().signal,
  );

describe('gcs through the s3 method (s3.url=https://storage.googleapis.com, HMAC keys)', () => {
  it('addresses the bucket virtual-hosted on storage.googleapis.com', () => {
    const h = gcsHost();
    expect(s3Object(h, { target: 'a b.grib', size: 1 }, s3Settings(h.options.raw)).url.href).toBe(
      `https://${GCS_BUCKET}.storage.googleapis.com/in/a%20b.grib`,
    );
  });

  it('signs for the Host and the region auto: the server takes the object', async () => {
    const authorizations: string[] = [];
    s3.fault = (req) => {
      authorizations.push(String(req.headers.authorization));
      return undefined;
    };
    const bytes = payload(200_000, 8);
    await expect(send(gcsHost(), 'f.grib', bytes)).resolves.toEqual({ sent: 200_000, md5: md5(bytes) });
    expect(s3.requests.at(-1)).toMatchObject({
      method: 'PUT',
      host: `${GCS_BUCKET}.storage.googleapis.com`,
      url: '/in/f.grib',
    });
    expect(authorizations.at(-1)).toMatch(/^AWS4-HMAC-SHA256 Credential=S3RVER\/\d{8}\/auto\/s3\/aws4_request, /);
    expect(authorizations.at(-1)).toMatch(/SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/);
    expect(md5((await s3.object('in/f.grib'))!)).toBe(md5(bytes));
  });

  it('a wrong HMAC secret is refused, and stores nothing', async () => {
    await expect(send(gcsHost('not-the-secret'), 'g.grib', payload(100))).rejects.toThrow(
      `S3 PUT ${GCS_BUCKET}/in/g.grib failed: 403 SignatureDoesNotMatch`,
    );
    expect(await s3.object('in/g.grib')).toBeNull();
  });
});
