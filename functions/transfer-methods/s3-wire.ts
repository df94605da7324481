import { createHash } from 'node:crypto';
import { AwsV4Signer } from 'aws4fetch';

/**
 * What the S3 clients share (the `s3` transfer method and the S3 object store): SigV4 over fetch,
 * keys as SigV4 signs them, and the few XML documents S3 answers with.
 */

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials' token (AWS_SESSION_TOKEN), else null. */
  sessionToken: string | null;
}

/**
 * A request signed with SigV4 for `s3` in `region`. Payloads go unsigned (`UNSIGNED-PAYLOAD`)
 * unless `headers` give their SHA-256, so a body is streamed rather than hashed first.
 */
export async function signedS3Request(
  fetchFn: typeof fetch,
  credentials: S3Credentials,
  region: string,
  request: {
    method: string;
    url: URL;
    headers: Record<string, string>;
    body: RequestInit['body'];
    signal: AbortSignal;
  },
): Promise<Response> {
  const signer = new AwsV4Signer({
    method: request.method,
    url: request.url.toString(),
    headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', ...request.headers },
    accessKeyId: credentials.accessKeyId,
    secretAccessKey: credentials.secretAccessKey,
    sessionToken: credentials.sessionToken ?? undefined,
    service: 's3',
    region,
  });
  const signed = await signer.sign();
  // Node's fetch needs `duplex: 'half'` for a streamed body; Workers ignores it. A redirect
  // (a bucket in another region) cannot replay a streamed body: it fails, with S3's reason.
  const init = {
    method: request.method,
    headers: signed.headers,
    body: request.body,
    signal: request.signal,
    duplex: 'half',
    redirect: 'manual',
  } as RequestInit;
  return fetchFn(signed.url.toString(), init);
}

/** Path segments encoded as SigV4 signs them (encodeURIComponent, plus `!'()*`). */
export const encodeKey = (key: string) =>
  key
    .split('/')
    .map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');

export const completeXml = (etags: string[]) =>
  `<CompleteMultipartUpload>${etags
    .map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`)
    .join('')}</CompleteMultipartUpload>`;

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** An ETag that is a plain MD5 (quotes removed), else null (multipart, KMS, or none). */
export const plainEtag = (etag: string | null) => {
  const bare = etag?.replace(/"/g, '').trim().toLowerCase() ?? '';
  return /^[0-9a-f]{32}$/.test(bare) ? bare : null;
};

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const unescapeXml = (s: string) =>
  s.replace(/&(amp|lt|gt|quot|apos|#(\d+)|#x([0-9a-fA-F]+));/g, (_, e: string, dec?: string, hex?: string) =>
    dec ? String.fromCodePoint(Number(dec)) : hex ? String.fromCodePoint(Number.parseInt(hex, 16)) : ENTITIES[e]!,
  );
export const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function xmlValue(xml: string, tag: string): string | null {
  const match = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml);
  return match ? unescapeXml(match[1]!) : null;
}

/** The inner text of each `<tag>…</tag>` element, in order (elements with no nested `tag`). */
export function xmlElements(xml: string, tag: string): string[] {
  return [...xml.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => m[1]!);
}

/** What of an error reply a message keeps: a reason, not the server's whole answer. */
const REASON_CHARS = 200;

/**
 * An S3 error document's Code and Message (never its StringToSign, CanonicalRequest or other
 * echoes of the request), at most REASON_CHARS of them; any other body, its first REASON_CHARS.
 */
export function s3Reason(xml: string): string {
  const code = xmlValue(xml, 'Code');
  const message = xmlValue(xml, 'Message');
  const reason = code === null && message === null ? xml : [code, message].filter(Boolean).join(' ');
  return reason.replace(/\s+/g, ' ').trim().slice(0, REASON_CHARS);
}
