import { constantTimeEqualText } from '../common/crypto.ts';

/**
 * AWS Signature Version 4 as S3 clients send it, in the Authorization header or in a presigned
 * URL's query: the request is read here (readSignature), then checked against the secret of the
 * access key it names (signatureMatches). WebCrypto only, so that it runs on Workers as on Node.
 */

export const SIGV4_ALGORITHM = 'AWS4-HMAC-SHA256';
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
export const STREAMING_PAYLOAD = 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD';
/** SDKs' default for uploads: aws-chunked, unsigned chunks, a checksum trailer. */
export const STREAMING_UNSIGNED_TRAILER = 'STREAMING-UNSIGNED-PAYLOAD-TRAILER';
/** How far a request's X-Amz-Date may be from the server's clock, as S3 allows. */
export const MAX_CLOCK_SKEW_MS = 15 * 60_000;
/** The longest a presigned URL may be valid: seven days, as S3 allows. */
export const MAX_PRESIGNED_SECONDS = 7 * 24 * 3600;
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** A request as the signature covers it. */
export interface SignableRequest {
  method: string;
  /** The path as sent, still percent-encoded. */
  path: string;
  /** The query string as sent, without its '?'. */
  query: string;
  /** Header values by lower-case name. */
  header(name: string): string | undefined;
}

/** What a signed request says about its signature; checked against a secret by signatureMatches. */
export interface SignedRequest {
  accessKey: string;
  /** `YYYYMMDDTHHMMSSZ`. */
  amzDate: string;
  /** `date/region/s3/aws4_request`. */
  scope: string;
  date: string;
  region: string;
  signedHeaders: string[];
  signature: string;
  /** What the canonical request names as the payload's hash: hex SHA-256, UNSIGNED-PAYLOAD or streaming. */
  payloadHash: string;
  presigned: boolean;
  canonicalRequest: string;
}

/** A refusal in S3's terms: its error code, status and message. */
export interface SignatureRefusal {
  code:
    | 'AccessDenied'
    | 'AuthorizationHeaderMalformed'
    | 'AuthorizationQueryParametersError'
    | 'InvalidArgument'
    | 'InvalidRequest'
    | 'RequestTimeTooSkewed'
    | 'SignatureDoesNotMatch'
    | 'MissingSecurityHeader';
  status: number;
  message: string;
}

/**
 * The signature a request carries, read and checked for everything but the secret: its form, its
 * scope (service `s3`, the date of X-Amz-Date), its time (within 15 minutes of `now`, or a
 * presigned URL not expired and valid at most 7 days), and that it signs the Host. Null when the
 * request carries none (anonymous).
 */
export function readSignature(request: SignableRequest, now: Date): SignedRequest | SignatureRefusal | null {
  const params = queryPairs(request.query);
  const param = (name: string) => params.find(([k]) => k === name)?.[1];
  const authorization = request.header('authorization');
  if (authorization !== undefined) return readHeaderSignature(request, authorization, params, now);
  if (param('X-Amz-Algorithm') !== undefined || param('X-Amz-Signature') !== undefined) {
    return readPresigned(request, params, now);
  }
  return null;
}

function readHeaderSignature(
  request: SignableRequest,
  authorization: string,
  params: Array<[string, string]>,
  now: Date,
): SignedRequest | SignatureRefusal {
  const match = /^AWS4-HMAC-SHA256\s+(.*)$/s.exec(authorization.trim());
  if (match === null) {
    return authError('The authorization mechanism is not supported; use AWS4-HMAC-SHA256', 'InvalidArgument');
  }
  const fields = new Map<string, string>();
  for (const part of match[1]!.split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const credential = fields.get('Credential');
  const signedHeaders = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (credential === undefined || signedHeaders === undefined || signature === undefined) {
    return authError('The Authorization header is malformed: Credential, SignedHeaders and Signature are required');
  }
  const amzDate = request.header('x-amz-date') ?? '';
  // S3 requires the payload's hash; a request without a body that leaves it out (curl's
  // --aws-sigv4) signed the hash of no bytes.
  const bodiless = (request.header('content-length') ?? '0') === '0' && !request.header('transfer-encoding');
  const payloadHash = request.header('x-amz-content-sha256') ?? (bodiless ? EMPTY_SHA256 : undefined);
  if (payloadHash === undefined) {
    return {
      code: 'InvalidRequest',
      status: 400,
      message: 'Missing required header for this request: x-amz-content-sha256',
    };
  }
  const read = readScope(credential, amzDate, 'AuthorizationHeaderMalformed');
  if ('code' in read) return read;
  const skew = Math.abs(now.getTime() - read.time);
  if (skew > MAX_CLOCK_SKEW_MS) {
    return {
      code: 'RequestTimeTooSkewed',
      status: 403,
      message: 'The difference between the request time and the current time is too large.',
    };
  }
  return finish(request, params, { ...read, amzDate, signedHeaders, signature, payloadHash, presigned: false });
}

function readPresigned(request: SignableRequest, params: Array<[string, string]>, now: Date) {
  const param = (name: string) => params.find(([k]) => k === name)?.[1];
  const queryError = (message: string) => authError(message, 'AuthorizationQueryParametersError');
  if (param('X-Amz-Algorithm') !== SIGV4_ALGORITHM) {
    return queryError('X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
  }
  const credential = param('X-Amz-Credential');
  const amzDate = param('X-Amz-Date');
  const expires = param('X-Amz-Expires');
  const signedHeaders = param('X-Amz-SignedHeaders');
  const signature = param('X-Amz-Signature');
  if ([credential, amzDate, expires, signedHeaders, signature].includes(undefined)) {
    return queryError(
      'Query-string authentication requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, ' +
        'X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.',
    );
  }
  if (!/^\d{1,7}$/.test(expires!) || Number(expires) > MAX_PRESIGNED_SECONDS) {
    return queryError('X-Amz-Expires must be a number of seconds from 0 to 604800 (seven days)');
  }
  const read = readScope(credential!, amzDate!, 'AuthorizationQueryParametersError');
  if ('code' in read) return read;
  if (now.getTime() > read.time + Number(expires) * 1000) {
    return { code: 'AccessDenied', status: 403, message: 'Request has expired' } as const;
  }
  if (read.time - now.getTime() > MAX_CLOCK_SKEW_MS) {
    return { code: 'AccessDenied', status: 403, message: 'Request is not valid yet' } as const;
  }
  return finish(request, params, {
    ...read,
    amzDate: amzDate!,
    signedHeaders: signedHeaders!,
    signature: signature!,
    payloadHash: request.header('x-amz-content-sha256') ?? UNSIGNED_PAYLOAD,
    presigned: true,
  });
}

/** `<access key>/<date>/<region>/s3/aws4_request` with an X-Amz-Date of that date. */
function readScope(credential: string, amzDate: string, code: MalformedCode) {
  const parts = credential.split('/');
  // The access key is a user's id, which may hold no '/': the scope is always the last four parts.
  if (parts.length < 5) return authError(`Invalid credential: ${credential}`, code);
  const [date, region, service, terminator] = parts.slice(-4) as [string, string, string, string];
  const accessKey = parts.slice(0, -4).join('/');
  const time = amzTime(amzDate);
  if (time === null) return authError('X-Amz-Date must be a date and time such as 20260101T000000Z', code);
  if (service !== 's3' || terminator !== 'aws4_request' || date !== amzDate.slice(0, 8) || region === '') {
    return authError(`Invalid credential scope: ${parts.slice(-4).join('/')}`, code);
  }
  return { accessKey, date, region, scope: parts.slice(-4).join('/'), time };
}

function finish(
  request: SignableRequest,
  params: Array<[string, string]>,
  signed: Omit<SignedRequest, 'canonicalRequest' | 'signedHeaders'> & { signedHeaders: string; time: number },
): SignedRequest | SignatureRefusal {
  const names = signed.signedHeaders.split(';');
  if (!names.includes('host') || names.some((n) => n === '' || n !== n.toLowerCase())) {
    return authError('SignedHeaders must name host, in lower case');
  }
  if (!/^[0-9a-f]{64}$/.test(signed.signature)) return authError('The signature must be 64 hexadecimal digits');
  const unsigned = signed.presigned ? params.filter(([k]) => k !== 'X-Amz-Signature') : params;
  const canonicalRequest = [
    request.method.toUpperCase(),
    canonicalPath(request.path),
    canonicalQuery(unsigned),
    `${names.map((n) => `${n}:${canonicalHeaderValue(request.header(n) ?? '')}`).join('\n')}\n`,
    names.join(';'),
    signed.payloadHash,
  ].join('\n');
  const { time: _, ...rest } = signed;
  return { ...rest, signedHeaders: names, canonicalRequest };
}

/** Whether the request was signed with this secret (compared in constant time). */
export async function signatureMatches(signed: SignedRequest, secret: string): Promise<boolean> {
  const key = await signingKey(secret, signed.date, signed.region);
  const expected = hex(await hmac(key, await stringToSign(signed)));
  return constantTimeEqualText(expected, signed.signature);
}

/** The signing key of a secret for a day and region (what the client derives too). */
export async function signingKey(secret: string, date: string, region: string) {
  const day = await hmac(utf8.encode(`AWS4${secret}`), date);
  return hmac(await hmac(await hmac(day, region), 's3'), 'aws4_request');
}

export async function stringToSign(signed: Pick<SignedRequest, 'amzDate' | 'scope' | 'canonicalRequest'>) {
  return [SIGV4_ALGORITHM, signed.amzDate, signed.scope, await sha256Hex(signed.canonicalRequest)].join('\n');
}

/**
 * The signature of one chunk of an `aws-chunked` body (STREAMING-AWS4-HMAC-SHA256-PAYLOAD): it
 * chains from the previous one, the first from the request's own. The chunk is given by its hex
 * SHA-256, which its reader computes as the bytes pass (a chunk may be as large as the object).
 */
export async function chunkSignature(
  key: Uint8Array,
  signed: Pick<SignedRequest, 'amzDate' | 'scope'>,
  previous: string,
  chunkSha256: string,
) {
  const toSign = ['AWS4-HMAC-SHA256-PAYLOAD', signed.amzDate, signed.scope, previous, EMPTY_SHA256, chunkSha256].join(
    '\n',
  );
  return hex(await hmac(key, toSign));
}

/**
 * The path as S3 canonicalises it: decoded, then encoded as RFC 3986 says (once), its slashes kept
 * (a key's `/` signs the same whether the client sent it encoded or not).
 */
export function canonicalPath(path: string): string {
  return uriEncode(safeDecode(path)).replace(/%2F/g, '/');
}

/** The query's pairs, decoded as URLSearchParams does (so that `+` is a space, as clients sign it). */
export function queryPairs(query: string): Array<[string, string]> {
  return [...new URLSearchParams(query)];
}

function canonicalQuery(pairs: Array<[string, string]>) {
  return pairs
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([k1, v1], [k2, v2]) => (k1 < k2 ? -1 : k1 > k2 ? 1 : v1 < v2 ? -1 : v1 > v2 ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

const canonicalHeaderValue = (value: string) => value.trim().replace(/\s+/g, ' ');

/** RFC 3986's encoding: everything but the unreserved characters, as upper-case %XX of UTF-8. */
export const uriEncode = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

function safeDecode(path: string) {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

function amzTime(amzDate: string): number | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (m === null) return null;
  const time = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
  return Number.isNaN(time) ? null : time;
}

type MalformedCode = 'AuthorizationHeaderMalformed' | 'AuthorizationQueryParametersError' | 'InvalidArgument';
const authError = (message: string, code: MalformedCode = 'AuthorizationHeaderMalformed'): SignatureRefusal => ({
  code,
  status: 400,
  message,
});

const utf8 = new TextEncoder();

async function hmac(key: Uint8Array, data: string | Uint8Array): Promise<Uint8Array> {
  const imported = await crypto.subtle.importKey(
    'raw',
    key as Uint8Array<ArrayBuffer>,
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const bytes = typeof data === 'string' ? utf8.encode(data) : data;
  return new Uint8Array(await crypto.subtle.sign('HMAC', imported, bytes as Uint8Array<ArrayBuffer>));
}

export async function sha256Hex(data: string | Uint8Array) {
  const bytes = typeof data === 'string' ? utf8.encode(data) : data;
  return hex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)));
}

const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
