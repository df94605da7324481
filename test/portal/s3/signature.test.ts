import { describe, expect, it } from 'vitest';
import {
  chunkSignature,
  EMPTY_SHA256,
  readSignature,
  type SignedRequest,
  sha256Hex,
  signatureMatches,
  signingKey,
} from '../../../core/portal/s3-signature.ts';

/**
 * Signature V4 against the examples of Amazon's S3 documentation ("Signature calculations for the
 * Authorization header" and "Authenticating requests: using query parameters"), whose signatures
 * were made by S3's own signer.
 */
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const AT = new Date('2013-05-24T00:00:00Z');

const request = (path: string, query: string, headers: Record<string, string>) => ({
  method: 'GET',
  path,
  query,
  header: (name: string) => headers[name],
});

describe('the Authorization header', () => {
  const headers = {
    host: 'examplebucket.s3.amazonaws.com',
    range: 'bytes=0-9',
    'x-amz-content-sha256': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    'x-amz-date': '20130524T000000Z',
    authorization:
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,' +
      'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,' +
      'Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
  };

  it("matches the documentation's GET Object with its secret, and not with another", async () => {
    const signed = readSignature(request('/test.txt', '', headers), AT) as SignedRequest;
    expect(signed).toMatchObject({ accessKey: 'AKIAIOSFODNN7EXAMPLE', region: 'us-east-1', presigned: false });
    expect(await signatureMatches(signed, SECRET)).toBe(true);
    expect(await signatureMatches(signed, `${SECRET}x`)).toBe(false);
  });

  it('does not match once a signed header or the path is changed', async () => {
    const ranged = readSignature(request('/test.txt', '', { ...headers, range: 'bytes=0-10' }), AT) as SignedRequest;
    expect(await signatureMatches(ranged, SECRET)).toBe(false);
    const moved = readSignature(request('/test2.txt', '', headers), AT) as SignedRequest;
    expect(await signatureMatches(moved, SECRET)).toBe(false);
  });

  it('is refused 15 minutes and a second away from the clock, in either direction', () => {
    for (const offset of [-(15 * 60 + 1), 15 * 60 + 1]) {
      const now = new Date(AT.getTime() + offset * 1000);
      expect(readSignature(request('/test.txt', '', headers), now)).toMatchObject({
        code: 'RequestTimeTooSkewed',
        status: 403,
      });
    }
    expect(readSignature(request('/test.txt', '', headers), new Date(AT.getTime() + 15 * 60_000))).toHaveProperty(
      'accessKey',
    );
  });

  it('is refused when malformed: another scheme, no payload hash, a scope of another day or service', () => {
    const read = (h: Record<string, string>) => readSignature(request('/test.txt', '', { ...headers, ...h }), AT);
    expect(read({ authorization: 'AWS AKIAIOSFODNN7EXAMPLE:abc' })).toMatchObject({ code: 'InvalidArgument' });
    const { 'x-amz-content-sha256': _, ...unhashed } = headers;
    const withBody = { ...unhashed, 'content-length': '10' };
    expect(readSignature(request('/test.txt', '', withBody), AT)).toMatchObject({ code: 'InvalidRequest' });
    const scope = (s: string) => ({ authorization: headers.authorization.replace('20130524/us-east-1/s3', s) });
    expect(read(scope('20130523/us-east-1/s3'))).toMatchObject({ code: 'AuthorizationHeaderMalformed' });
    expect(read(scope('20130524/us-east-1/ec2'))).toMatchObject({ code: 'AuthorizationHeaderMalformed' });
    expect(read({ authorization: headers.authorization.replace('host;', '') })).toMatchObject({
      code: 'AuthorizationHeaderMalformed',
    });
  });

  it('without x-amz-content-sha256 nor a body, signs the hash of no bytes (as curl --aws-sigv4 does)', async () => {
    const { 'x-amz-content-sha256': _, ...unhashed } = headers;
    const signed = readSignature(request('/test.txt', '', unhashed), AT) as SignedRequest;
    expect(signed.payloadHash).toBe(headers['x-amz-content-sha256']);
  });

  it('is absent from an anonymous request', () => {
    expect(readSignature(request('/test.txt', '', { host: 'examplebucket.s3.amazonaws.com' }), AT)).toBeNull();
  });
});

describe('a presigned URL', () => {
  const query =
    'X-Amz-Algorithm=AWS4-HMAC-SHA256' +
    '&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request' +
    '&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host' +
    '&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404';
  const headers = { host: 'examplebucket.s3.amazonaws.com' };

  it("matches the documentation's example while it is valid", async () => {
    const signed = readSignature(request('/test.txt', query, headers), AT) as SignedRequest;
    expect(signed.presigned).toBe(true);
    expect(await signatureMatches(signed, SECRET)).toBe(true);
    const later = readSignature(request('/test.txt', query, headers), new Date(AT.getTime() + 86_400_000));
    expect(await signatureMatches(later as SignedRequest, SECRET)).toBe(true);
  });

  it('is refused once expired, and when it claims more than seven days', () => {
    const expired = readSignature(request('/test.txt', query, headers), new Date(AT.getTime() + 86_401_000));
    expect(expired).toMatchObject({ code: 'AccessDenied', status: 403, message: 'Request has expired' });
    const long = readSignature(request('/test.txt', query.replace('Expires=86400', 'Expires=604801'), headers), AT);
    expect(long).toMatchObject({ code: 'AuthorizationQueryParametersError', status: 400 });
  });

  it('does not match with another query parameter added', async () => {
    const signed = readSignature(request('/test.txt', `${query}&versionId=1`, headers), AT) as SignedRequest;
    expect(await signatureMatches(signed, SECRET)).toBe(false);
  });
});

describe('an aws-chunked upload (STREAMING-AWS4-HMAC-SHA256-PAYLOAD)', () => {
  const headers = {
    'content-encoding': 'aws-chunked',
    'content-length': '66824',
    host: 's3.amazonaws.com',
    'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
    'x-amz-date': '20130524T000000Z',
    'x-amz-decoded-content-length': '66560',
    'x-amz-storage-class': 'REDUCED_REDUNDANCY',
    authorization:
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,' +
      'SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;' +
      'x-amz-decoded-content-length;x-amz-storage-class,' +
      'Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9',
  };

  it("signs its seed and each chunk as the documentation's example, in a chain", async () => {
    const put = { ...request('/examplebucket/chunkObject.txt', '', headers), method: 'PUT' };
    const signed = readSignature(put, AT) as SignedRequest;
    expect(await signatureMatches(signed, SECRET)).toBe(true);
    const key = await signingKey(SECRET, signed.date, signed.region);
    const first = await chunkSignature(key, signed, signed.signature, await sha256Hex(new Uint8Array(65536).fill(97)));
    expect(first).toBe('ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648');
    const second = await chunkSignature(key, signed, first, await sha256Hex(new Uint8Array(1024).fill(97)));
    expect(second).toBe('0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497');
    const last = await chunkSignature(key, signed, second, EMPTY_SHA256);
    expect(last).toBe('b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9');
  });
});
