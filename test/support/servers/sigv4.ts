import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * SigV4 header signatures checked the way S3 checks them, written apart from the signer under
 * test. s3rver 3.7.1 only looks up the access key of a V4 request and accepts any signature
 * ("Signature version 4 calculation is unimplemented"), so the test server checks them here.
 * The payload hash is taken as the request states it (UNSIGNED-PAYLOAD or a hex digest).
 */
export type SignatureCheck = 'unsigned' | 'valid' | 'mismatch' | 'unknownKey';

const AUTH = new RegExp(
  '^AWS4-HMAC-SHA256 Credential=([^/]+)/(\\d{8})/([^/]+)/([^/]+)/aws4_request, ?' +
    'SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$',
);

const rfc3986 = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export function checkSignature(req: IncomingMessage, secrets: ReadonlyMap<string, string>): SignatureCheck {
  const auth = req.headers.authorization;
  if (!auth) return 'unsigned';
  const match = AUTH.exec(auth);
  if (!match) return 'mismatch';
  const [, keyId, date, region, service, signedHeaders, signature] = match as unknown as string[];
  const secret = secrets.get(keyId!);
  if (secret === undefined) return 'unknownKey';

  const [rawPath = '', rawQuery = ''] = (req.url ?? '/').split('?', 2);
  const uri = rawPath
    .split('/')
    .map((s) => rfc3986(decodeURIComponent(s)))
    .join('/');
  const query = rawQuery
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const eq = pair.indexOf('=');
      const [k, v] = eq < 0 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1)];
      return [rfc3986(decodeURIComponent(k)), rfc3986(decodeURIComponent(v))] as const;
    })
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const headers = signedHeaders!
    .split(';')
    .map((name) => {
      const value = req.headers[name];
      const text = Array.isArray(value) ? value.join(',') : (value ?? '');
      return `${name}:${text.trim().replace(/\s+/g, ' ')}\n`;
    })
    .join('');
  const payload = String(req.headers['x-amz-content-sha256'] ?? '');
  const canonical = [req.method, uri, query, headers, signedHeaders, payload].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    String(req.headers['x-amz-date'] ?? ''),
    scope,
    createHash('sha256').update(canonical).digest('hex'),
  ].join('\n');
  let key: Buffer = Buffer.from(`AWS4${secret}`);
  for (const part of [date!, region!, service!, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  const expected = createHmac('sha256', key).update(stringToSign).digest();
  return timingSafeEqual(expected, Buffer.from(signature!, 'hex')) ? 'valid' : 'mismatch';
}
