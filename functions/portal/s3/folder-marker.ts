import { mayMakeDirectory } from '../../../core/portal/folders.ts';
import { isServableKey } from '../../../core/portal/s3-objects.ts';
import { accessDenied, S3Failure } from './errors.ts';
import type { S3Request } from './index.ts';

/** The ETag S3 gives an object of no bytes: the MD5 of nothing. */
const EMPTY_ETAG = '"d41d8cd98f00b204e9800998ecf8427e"';

/**
 * A PutObject of a key ending in '/' with no bytes: the folder marker some S3 clients put for a new
 * folder. The tree's folders are virtual (core/portal/folders.ts): the marker is answered as making
 * that folder is on every protocol (mayMakeDirectory), and nothing is stored; the folder shows once
 * a file is put below it. A key ending in '/' with bytes could not be a file of the tree.
 */
export function putFolderMarker(r: S3Request, key: string): Response {
  const path = key.slice(0, -1);
  const copy = r.c.req.header('x-amz-copy-source') !== undefined;
  if (!isServableKey(path) || copy || r.query.has('uploadId')) throw notAFile();
  if (!mayMakeDirectory(r.visitor.identity, r.bucket, path)) throw accessDenied();
  // S3 requires a length; a streamed (aws-chunked) body gives its payload's apart from its framing.
  const length = r.c.req.header('x-amz-decoded-content-length') ?? r.c.req.header('content-length');
  if (length === undefined)
    throw new S3Failure(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
  if (length.trim() !== '0') throw notAFile();
  return new Response(null, { status: 200, headers: { etag: EMPTY_ETAG, 'x-amz-version-id': 'null' } });
}

const notAFile = () =>
  new S3Failure(400, 'InvalidArgument', 'A key ending in "/" names a folder: only an empty folder marker is taken');
