import type { PortalIdentity } from './access.ts';
import { answerDownload, type ByteRange, type ServedFile } from './download.ts';
import { allowed } from './options.ts';
import { isServableKey } from './s3-objects.ts';

/**
 * S3's copies (CopyObject, UploadPartCopy) within one user's tree: what the request names as its
 * source, and whether the user may make the copy. A copy is a download and an upload in one: `get`
 * on the source and `put` on the target, each with its path rule, both buckets the user's own
 * destinations. What it registers is what an upload registers (registerUpload): the copy is a new
 * file of the target's destination, with its `incoming.*` options, "Via Data Portal".
 */

/** The object a copy reads. */
export interface CopySource {
  bucket: string;
  key: string;
}

/** A copy refused, in S3's terms. */
export interface CopyRefusal {
  status: number;
  code: 'AccessDenied' | 'InvalidArgument' | 'InvalidRequest' | 'NoSuchBucket' | 'PreconditionFailed';
  message: string;
}

const refusal = (status: number, code: CopyRefusal['code'], message: string): CopyRefusal => ({
  status,
  code,
  message,
});

export const isCopyRefusal = (value: object): value is CopyRefusal => 'code' in value;

/**
 * `x-amz-copy-source`: `[/]<bucket>/<key>`, URL-encoded, with an optional `?versionId=`. The tree
 * keeps no versions: a version id is refused rather than ignored, so that a client asking for an
 * older version never gets the current one instead (`null`, the id S3 gives objects of a bucket
 * without versioning and the one this endpoint answers puts with, names the current one).
 */
export function readCopySource(header: string): CopySource | CopyRefusal {
  const text = header.trim();
  const mark = text.indexOf('?');
  const encoded = mark < 0 ? text : text.slice(0, mark);
  const version = new URLSearchParams(mark < 0 ? '' : text.slice(mark + 1)).get('versionId');
  if (version !== null && version !== 'null') {
    return refusal(
      400,
      'InvalidArgument',
      'Objects have no versions here: x-amz-copy-source may name no versionId but null (the current object)',
    );
  }
  let path: string;
  try {
    path = decodeURIComponent(encoded);
  } catch {
    return refusal(400, 'InvalidArgument', 'x-amz-copy-source must be URL-encoded: <bucket>/<key>');
  }
  path = path.startsWith('/') ? path.slice(1) : path;
  const slash = path.indexOf('/');
  const bucket = slash < 0 ? path : path.slice(0, slash);
  const key = slash < 0 ? '' : path.slice(slash + 1);
  if (bucket === '' || key === '') {
    return refusal(
      400,
      'InvalidArgument',
      'Copy Source must mention the source bucket and key: sourcebucket/sourcekey',
    );
  }
  if (!isServableKey(key)) {
    return refusal(400, 'InvalidArgument', 'Invalid copy source key: empty, "." and ".." segments are refused');
  }
  return { bucket, key };
}

/**
 * Whether the user may copy `source` to `target`: the source's bucket is one of its destinations
 * (another is as missing as one that does not exist, as everywhere in the portal), and it may `get`
 * the source and `put` the target. An object copied onto itself is refused, as S3 does when no
 * metadata changes: the tree keeps none to change, and the copy would only send the file again.
 * `wholeObject`: CopyObject (UploadPartCopy makes a part, never the object itself).
 */
export function mayCopy(
  who: Pick<PortalIdentity, 'destinations' | 'permissions' | 'settings'>,
  source: CopySource,
  target: CopySource,
  wholeObject: boolean,
): CopyRefusal | null {
  if (!who.destinations.includes(source.bucket)) {
    return refusal(404, 'NoSuchBucket', 'The specified bucket does not exist');
  }
  const may = (op: 'get' | 'put', o: CopySource) => allowed(who.permissions, who.settings, op, `${o.bucket}/${o.key}`);
  if (!may('get', source) || !may('put', target)) return refusal(403, 'AccessDenied', 'Access Denied');
  if (wholeObject && source.bucket === target.bucket && source.key === target.key) {
    return refusal(
      400,
      'InvalidRequest',
      'This copy request is illegal because it is trying to copy an object to itself ' +
        "without changing the object's metadata, storage class, website redirect location or encryption attributes.",
    );
  }
  return null;
}

/** The `x-amz-copy-source-if-*` headers, by their HTTP names' meaning. */
export interface CopyConditions {
  ifMatch: string | null;
  ifNoneMatch: string | null;
  ifModifiedSince: string | null;
  ifUnmodifiedSince: string | null;
}

/**
 * The copy's preconditions on its source, in RFC 9110's order as S3 applies them (an `if-match`
 * that holds passes whatever `if-unmodified-since` says; an `if-none-match` decides alone): any
 * that fails refuses the copy (412), where a download would answer 304.
 */
export function copyPreconditions(source: ServedFile, conditions: CopyConditions, now: Date): CopyRefusal | null {
  const answer = answerDownload(source, { method: 'HEAD', ...conditions }, now);
  return answer.status === 412 || answer.status === 304
    ? refusal(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold')
    : null;
}

/**
 * The bytes an UploadPartCopy takes (`x-amz-copy-source-range: bytes=first-last`, both within the
 * source), or the whole source without one; null for a whole source of no bytes.
 */
export function copyRange(header: string | null, size: number): ByteRange | null | CopyRefusal {
  if (header === null) return size === 0 ? null : { start: 0, end: size - 1 };
  const match = /^bytes=(\d{1,15})-(\d{1,15})$/.exec(header.trim());
  if (match === null) {
    return refusal(
      400,
      'InvalidArgument',
      'The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are ' +
        'the zero-based offsets of the first and last bytes to copy',
    );
  }
  const start = Number(match[1]);
  const end = Number(match[2]);
  if (start > end || end >= size) {
    return refusal(400, 'InvalidArgument', `Range specified is not valid for source object of size: ${size}`);
  }
  return { start, end };
}
