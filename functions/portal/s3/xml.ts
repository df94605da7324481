import { entityTagOf } from '../../../core/portal/download.ts';
import type { PortalFile } from '../../../core/portal/ports.ts';
import type { ObjectListing } from '../../../core/portal/s3-objects.ts';
import { s3ServedFile } from '../../../core/portal/s3-served.ts';

/** The S3 endpoint's answers in S3's XML. */

const XMLNS = 'http://s3.amazonaws.com/doc/2006-03-01/';
const DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n';

export const escapeXml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);

const element = (name: string, value: string | number | boolean) => `<${name}>${escapeXml(String(value))}</${name}>`;

export function xmlAnswer(body: string, status = 200, headers: Record<string, string> = {}) {
  return new Response(DECLARATION + body, {
    status,
    headers: { 'content-type': 'application/xml', ...headers },
  });
}

/** An error as S3 answers it; the message never holds a secret or a reason the portal keeps to itself. */
export function s3Error(
  status: number,
  code: string,
  message: string,
  extra: { requestId: string; resource?: string; headers?: Record<string, string> },
) {
  const resource = extra.resource === undefined ? '' : element('Resource', extra.resource);
  const fields = `${element('Code', code)}${element('Message', message)}${resource}`;
  const body = `<Error>${fields}${element('RequestId', extra.requestId)}</Error>`;
  return xmlAnswer(body, status, { 'x-amz-request-id': extra.requestId, ...extra.headers });
}

/** ETag of a file: its MD5 when known (quoted, as S3 sends it), the one its downloads carry (s3ServedFile). */
export const etagOf = (file: PortalFile) => entityTagOf(s3ServedFile(file));

/** ListBuckets: each bucket (a destination) with its creation date. */
export function listBucketsXml(owner: string, buckets: ReadonlyArray<{ name: string; created: Date }>) {
  const list = buckets
    .map((b) => `<Bucket>${element('Name', b.name)}${element('CreationDate', b.created.toISOString())}</Bucket>`)
    .join('');
  const who = `<Owner>${element('ID', owner)}${element('DisplayName', owner)}</Owner>`;
  return `<ListAllMyBucketsResult xmlns="${XMLNS}">${who}<Buckets>${list}</Buckets></ListAllMyBucketsResult>`;
}

export interface ListingXml {
  version: 1 | 2;
  bucket: string;
  prefix: string;
  delimiter: string | null;
  maxKeys: number;
  /** `encoding-type=url`: keys and prefixes percent-encoded. */
  urlEncoded: boolean;
  /** V2: the token or start-after asked with, and the token of the next page. */
  continuationToken?: string | null;
  startAfter?: string | null;
  nextContinuationToken?: string | null;
  /** V1: the marker asked with. */
  marker?: string;
  owner: string;
  /** Sizes and times only with the `size` and `mtime` permissions (0 and the epoch otherwise). */
  showSize: boolean;
  showTime: boolean;
}

export function listObjectsXml(listing: ObjectListing, x: ListingXml) {
  const key = (k: string) => (x.urlEncoded ? encodeURIComponent(k).replace(/%2F/g, '/') : k);
  const contents = listing.files
    .map((f) => {
      const etag = etagOf(f);
      return (
        `<Contents>${element('Key', key(f.path))}` +
        element('LastModified', (x.showTime ? f.modifiedAt : new Date(0)).toISOString()) +
        (etag === null ? '' : element('ETag', etag)) +
        element('Size', x.showSize ? f.size : 0) +
        (x.version === 1 ? `<Owner>${element('ID', x.owner)}${element('DisplayName', x.owner)}</Owner>` : '') +
        `${element('StorageClass', 'STANDARD')}</Contents>`
      );
    })
    .join('');
  const prefixes = listing.commonPrefixes.map((p) => `<CommonPrefixes>${element('Prefix', key(p))}</CommonPrefixes>`);
  const head = [
    element('Name', x.bucket),
    element('Prefix', key(x.prefix)),
    x.delimiter === null ? '' : element('Delimiter', key(x.delimiter)),
    element('MaxKeys', x.maxKeys),
    x.urlEncoded ? element('EncodingType', 'url') : '',
    element('IsTruncated', listing.truncated),
  ];
  if (x.version === 2) {
    head.push(element('KeyCount', listing.files.length + listing.commonPrefixes.length));
    if (x.continuationToken) head.push(element('ContinuationToken', x.continuationToken));
    if (x.startAfter) head.push(element('StartAfter', key(x.startAfter)));
    if (x.nextContinuationToken) head.push(element('NextContinuationToken', x.nextContinuationToken));
  } else {
    head.push(element('Marker', key(x.marker ?? '')));
    if (listing.truncated && listing.last !== null) head.push(element('NextMarker', key(listing.last)));
  }
  return `<ListBucketResult xmlns="${XMLNS}">${head.join('')}${contents}${prefixes.join('')}</ListBucketResult>`;
}

export const locationXml = () => `<LocationConstraint xmlns="${XMLNS}"></LocationConstraint>`;

export const initiateMultipartXml = (bucket: string, key: string, uploadId: string) =>
  `<InitiateMultipartUploadResult xmlns="${XMLNS}">${element('Bucket', bucket)}${element('Key', key)}` +
  `${element('UploadId', uploadId)}</InitiateMultipartUploadResult>`;

export const completeMultipartXml = (location: string, bucket: string, key: string, etag: string) =>
  `<CompleteMultipartUploadResult xmlns="${XMLNS}">${element('Location', location)}${element('Bucket', bucket)}` +
  `${element('Key', key)}${element('ETag', etag)}</CompleteMultipartUploadResult>`;

/** CopyObject's answer: the copy's entity tag and time. */
export const copyObjectXml = (etag: string, modified: Date) =>
  `<CopyObjectResult xmlns="${XMLNS}">${element('LastModified', modified.toISOString())}` +
  `${element('ETag', etag)}</CopyObjectResult>`;

/** UploadPartCopy's answer: the part's entity tag and time. */
export const copyPartXml = (etag: string, modified: Date) =>
  `<CopyPartResult xmlns="${XMLNS}">${element('LastModified', modified.toISOString())}` +
  `${element('ETag', etag)}</CopyPartResult>`;

/** The parts a CompleteMultipartUpload names, in its order: numbers and ETags (unquoted). */
export function completedParts(body: string): Array<{ partNumber: number; etag: string }> | null {
  if (!/<CompleteMultipartUpload[\s>]/.test(body)) return null;
  const parts: Array<{ partNumber: number; etag: string }> = [];
  for (const match of body.matchAll(/<Part>([\s\S]*?)<\/Part>/g)) {
    const number = /<PartNumber>\s*(\d{1,5})\s*<\/PartNumber>/.exec(match[1]!)?.[1];
    const etag = /<ETag>([\s\S]*?)<\/ETag>/.exec(match[1]!)?.[1];
    if (number === undefined || etag === undefined) return null;
    parts.push({ partNumber: Number(number), etag: unescapeXml(etag).trim().replace(/^"|"$/g, '') });
  }
  return parts;
}

const unescapeXml = (text: string) =>
  text.replace(/&(amp|lt|gt|quot|apos|#34);/g, (_, e: string) =>
    e === 'amp' ? '&' : e === 'lt' ? '<' : e === 'gt' ? '>' : e === 'apos' ? "'" : '"',
  );
