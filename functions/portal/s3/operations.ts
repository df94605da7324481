import { base64ToBytes, bytesToBase64Url, strictUtf8 } from '../../../core/common/encoding.ts';
import { mayList, mayShow } from '../../../core/portal/listing-rule.ts';
import { allowed } from '../../../core/portal/options.ts';
import type { PortalOperation } from '../../../core/portal/ports.ts';
import { isServableKey, listObjects, MAX_KEYS } from '../../../core/portal/s3-objects.ts';
import { s3ServedFile } from '../../../core/portal/s3-served.ts';
import { deletePortalFile, treeViewer } from '../../../core/portal/uploads.ts';
import { downloadAnswer, downloadRequest } from '../download.ts';
import { copyObject, uploadPartCopy } from './copy.ts';
import { accessDenied, notImplemented, S3Failure } from './errors.ts';
import { putFolderMarker } from './folder-marker.ts';
import type { S3Request } from './index.ts';
import { abortMultipart, completeMultipart, createMultipart, putObject, uploadPart } from './uploads.ts';
import { S3 } from './who.ts';
import { listObjectsXml, locationXml, s3Error, xmlAnswer } from './xml.ts';

/** Sub-resources of buckets and objects this endpoint does not serve. */
const UNSERVED = new Set([
  'acl',
  'policy',
  'versioning',
  'versions',
  'lifecycle',
  'cors',
  'tagging',
  'website',
  'logging',
  'notification',
  'encryption',
  'replication',
  'object-lock',
  'ownershipControls',
  'publicAccessBlock',
  'accelerate',
  'requestPayment',
  'analytics',
  'metrics',
  'inventory',
  'intelligent-tiering',
  'legal-hold',
  'retention',
  'torrent',
  'attributes',
  'restore',
  'select',
  'delete',
]);

/** A request of a bucket itself: its listing (V1 or V2), location, existence. */
export async function bucketAnswer(r: S3Request): Promise<Response> {
  const method = r.c.req.method;
  if ([...r.query.keys()].some((k) => UNSERVED.has(k))) throw notImplemented();
  if (method === 'HEAD') return new Response(null, { status: 200 });
  if (method === 'PUT') {
    throw new S3Failure(
      409,
      'BucketAlreadyOwnedByYou',
      'Your previous request to create the named bucket succeeded and you already own it.',
    );
  }
  if (method !== 'GET') throw notImplemented();
  if (r.query.has('location')) return xmlAnswer(locationXml());
  if (r.query.has('uploads')) throw notImplemented('Listing multipart uploads is not implemented.');
  return listAnswer(r);
}

async function listAnswer(r: S3Request) {
  const { query, visitor } = r;
  const version = query.get('list-type') === '2' ? 2 : 1;
  const maxKeysText = query.get('max-keys') ?? String(MAX_KEYS);
  if (!/^\d{1,9}$/.test(maxKeysText)) throw invalidArgument('max-keys must be a whole number from 0');
  const maxKeys = Math.min(Number(maxKeysText), MAX_KEYS);
  const prefix = query.get('prefix') ?? '';
  const delimiter = query.get('delimiter') || null;
  const encoding = query.get('encoding-type');
  if (encoding !== undefined && encoding !== 'url')
    throw invalidArgument('Invalid Encoding Method specified in Request');
  const token = version === 2 ? (query.get('continuation-token') ?? null) : null;
  const startAfter = version === 2 ? (query.get('start-after') ?? null) : (query.get('marker') ?? null);
  const after = token !== null ? keyOfToken(token) : startAfter || null;

  // The directory the prefix names a part of is listed as HTTPS lists it; every key and common
  // prefix shows by the same rule (keys of other directories below it too, with no delimiter).
  const slash = prefix.lastIndexOf('/');
  const who = visitor.identity;
  if (!mayList(who, r.bucket, slash < 0 ? '' : prefix.slice(0, slash))) throw accessDenied();
  const visible = (name: string) => mayShow(who, r.bucket, name);
  const viewer = treeViewer(who);
  const listing = await listObjects(r.ports, r.bucket, { prefix, delimiter, after, maxKeys, visible, viewer });
  const { permissions } = who;
  const xml = listObjectsXml(listing, {
    version,
    bucket: r.bucket,
    prefix,
    delimiter,
    maxKeys,
    urlEncoded: encoding === 'url',
    continuationToken: token,
    startAfter: version === 2 ? startAfter : null,
    nextContinuationToken: listing.truncated && listing.last !== null ? tokenOfKey(listing.last) : null,
    marker: startAfter ?? '',
    owner: visitor.identity.userId,
    showSize: permissions.includes('size'),
    showTime: permissions.includes('mtime'),
  });
  return xmlAnswer(xml);
}

/** A request of an object: GetObject, HeadObject, PutObject, CopyObject, DeleteObject, the multipart upload's steps. */
export async function objectAnswer(r: S3Request, key: string): Promise<Response> {
  if (r.c.req.method === 'PUT' && key.endsWith('/')) return putFolderMarker(r, key);
  if (!isServableKey(key)) throw invalidArgument('Invalid object key: empty, "." and ".." segments are refused');
  const method = r.c.req.method;
  if ([...r.query.keys()].some((k) => UNSERVED.has(k))) throw notImplemented();
  const ruled = `${r.bucket}/${key}`;
  const uploadId = r.query.get('uploadId');
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (uploadId !== undefined) throw notImplemented('Listing the parts of a multipart upload is not implemented.');
      return getObject(r, key, method);
    case 'PUT': {
      requirePermission(r, 'put', ruled);
      const copySource = r.c.req.header('x-amz-copy-source');
      const partNumber = r.query.get('partNumber') ?? '';
      if (copySource !== undefined) {
        return uploadId === undefined
          ? copyObject(r, key, copySource)
          : uploadPartCopy(r, key, uploadId, partNumber, copySource);
      }
      if (uploadId !== undefined) return uploadPart(r, key, uploadId, partNumber);
      return putObject(r, key);
    }
    case 'POST':
      requirePermission(r, 'put', ruled);
      if (r.query.has('uploads')) return createMultipart(r, key);
      if (uploadId !== undefined) return completeMultipart(r, key, uploadId);
      throw notImplemented();
    case 'DELETE': {
      if (uploadId !== undefined) {
        requirePermission(r, 'put', ruled);
        return abortMultipart(r, key, uploadId);
      }
      requirePermission(r, 'delete', ruled);
      const file = await r.ports.repos.portal.file(r.bucket, key, r.ports.clock(), treeViewer(r.visitor.identity));
      if (file !== null) await deletePortalFile(r.ports, r.visitor.identity, file, r.requestId);
      return new Response(null, { status: 204 });
    }
    default:
      throw notImplemented();
  }
}

async function getObject(r: S3Request, key: string, method: 'GET' | 'HEAD') {
  requirePermission(r, 'get', `${r.bucket}/${key}`);
  const { ports, c } = r;
  const file = await ports.repos.portal.file(r.bucket, key, ports.clock(), treeViewer(r.visitor.identity));
  if (file === null) {
    if (method === 'HEAD') return new Response(null, { status: 404 });
    throw new S3Failure(404, 'NoSuchKey', 'The specified key does not exist.');
  }
  const request = downloadRequest((name) => c.req.header(name), method, false);
  const deps = {
    ports,
    sources: r.options.sources,
    serverName: r.options.serverName,
    address: r.address,
    requestId: r.requestId,
    abandonAfterMs: r.options.abandonAfterMs ?? null,
    recheckMs: r.options.recheckMs,
    protocol: S3,
  };
  const answer = await downloadAnswer(deps, r.visitor, request, r.bucket, file, s3ServedFile(file));
  const resource = new URL(c.req.url).pathname;
  const failure = (code: string, message: string, headers: Record<string, string> = {}) =>
    method === 'HEAD'
      ? new Response(null, { status: answer.status, headers })
      : s3Error(answer.status, code, message, { requestId: r.requestId, resource, headers });
  if (answer.status === 416) {
    return failure('InvalidRange', 'The requested range is not satisfiable', {
      'content-range': answer.headers.get('content-range') ?? `bytes */${file.size}`,
    });
  }
  if (answer.status === 412)
    return failure('PreconditionFailed', 'At least one of the preconditions you specified did not hold');
  if (answer.status >= 500) return failure('InternalError', await answer.text());
  return answer;
}

/** The user may do `op` on this path (its permission and path rule), or is denied. */
function requirePermission(r: S3Request, op: PortalOperation, ruled: string) {
  const { permissions, settings } = r.visitor.identity;
  if (!allowed(permissions, settings, op, ruled)) throw accessDenied();
}

const invalidArgument = (message: string) => new S3Failure(400, 'InvalidArgument', message);

/** A continuation token: the last key or common prefix of a page, opaque to the client. */
const tokenOfKey = (key: string) => bytesToBase64Url(new TextEncoder().encode(key));

function keyOfToken(token: string) {
  const base64 = token.replace(/-/g, '+').replace(/_/g, '/');
  let key: string | null = null;
  try {
    key = /^[A-Za-z0-9+/]*$/.test(base64) ? strictUtf8(base64ToBytes(base64)) : null;
  } catch {
    key = null;
  }
  if (key === null || key === '') throw invalidArgument('The continuation token provided is incorrect');
  return key;
}
