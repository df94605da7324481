import { createHash } from 'node:crypto';
import { AwsV4Signer } from 'aws4fetch';
import type { ListedEntry } from '../../core/acquisition/selection.ts';

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

/** Text encoded as SigV4 signs it (encodeURIComponent, plus `!'()*`). */
const encodeText = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Path segments encoded as SigV4 signs them. */
export const encodeKey = (key: string) => key.split('/').map(encodeText).join('/');

/**
 * A query string, the parameters without a value left out, encoded as SigV4 signs it. A space is
 * `%20`: a `+` (as URLSearchParams writes one) is a space to the signer but may be a plus to the
 * server, and the signatures would then differ.
 */
export const queryOf = (params: Record<string, string | null>) =>
  Object.entries(params)
    .filter((param): param is [string, string] => param[1] !== null && param[1] !== '')
    .map(([name, value]) => `${name}=${encodeText(value)}`)
    .join('&');

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
export const unescapeXml = (s: string) =>
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

/**
 * The entries of a ListObjectsV2 page (with delimiter `/`) directly under `prefix`: its objects as
 * files, its common prefixes as directories. The object named by the prefix itself (a console's
 * folder marker) is no entry.
 */
export function listedObjects(xml: string, prefix: string): ListedEntry[] {
  const files = xmlElements(xml, 'Contents').map((object): ListedEntry => {
    const size = xmlValue(object, 'Size') ?? '';
    return {
      name: nameUnder(prefix, xmlValue(object, 'Key')),
      type: 'file',
      size: /^\d+$/.test(size) ? Number(size) : null,
      time: dateOf(xmlValue(object, 'LastModified')),
    };
  });
  const directories = xmlElements(xml, 'CommonPrefixes').map(
    (common): ListedEntry => ({
      name: nameUnder(prefix, xmlValue(common, 'Prefix')).replace(/\/$/, ''),
      type: 'directory',
      size: null,
      time: null,
    }),
  );
  return [...files, ...directories].filter((entry) => entry.name !== '');
}

/** What follows `prefix` in a key (a basename, with the delimiter `/`); '' for a key not under it. */
export const nameUnder = (prefix: string, key: string | null) =>
  key?.startsWith(prefix) ? key.slice(prefix.length) : '';

/** A date the server wrote (ISO 8601, RFC 1123); null when there is none or it does not read. */
export function dateOf(text: string | null): Date | null {
  const time = text === null ? Number.NaN : Date.parse(text);
  return Number.isNaN(time) ? null : new Date(time);
}

/**
 * Each entry once, the first of a name and type kept: s3rver lists a common prefix that sorts after
 * a page's last key on that page and again on the next, and other servers may do as much.
 */
export function uniqueEntries(entries: Iterable<ListedEntry>): ListedEntry[] {
  const seen = new Map<string, ListedEntry>();
  for (const entry of entries) {
    const key = `${entry.type}:${entry.name}`;
    if (!seen.has(key)) seen.set(key, entry);
  }
  return [...seen.values()];
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
