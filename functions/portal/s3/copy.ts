import { createHash } from 'node:crypto';
import { shownSource } from '../../../core/data-files/sources.ts';
import type { SourceRange } from '../../../core/dissemination/send.ts';
import type { PortalFile } from '../../../core/portal/ports.ts';
import {
  type CopySource,
  copyPreconditions,
  copyRange,
  isCopyRefusal,
  mayCopy,
  readCopySource,
} from '../../../core/portal/s3-copy.ts';
import { s3ServedFile } from '../../../core/portal/s3-served.ts';
import { treeViewer } from '../../../core/portal/uploads.ts';
import { openFileBytes } from '../../../core/store/file-bytes.ts';
import { receiveUpload } from '../upload.ts';
import { S3Failure } from './errors.ts';
import type { S3Request } from './index.ts';
import { partTarget, storePart, uploadDeps } from './uploads.ts';
import { copyObjectXml, copyPartXml, xmlAnswer } from './xml.ts';

/**
 * CopyObject and UploadPartCopy: the source's bytes as its downloads read them (its stored copy
 * once retrieved), written to the target as an upload of the user (its connection limit, its upload
 * quota, an INH upload line) and registered as one (core/portal/s3-copy.ts says who may copy). The
 * bytes never leave the server: no download is counted.
 */

export async function copyObject(r: S3Request, key: string, header: string) {
  const { source, file } = await copySource(r, header, key, true);
  const md5 = createHash('md5');
  const bytes = await sourceBytes(r, source, file, undefined);
  let uploaded: Awaited<ReturnType<typeof receiveUpload>>;
  try {
    const target = { destination: r.bucket, path: key };
    uploaded = await receiveUpload(uploadDeps(r), r.visitor, target, hashed(bytes.stream, md5), file.size);
  } finally {
    bytes.close();
  }
  const digest = md5.digest('hex');
  await r.ports.repos.portal.recordChecksum(uploaded.dataFileId, digest);
  const registered = await r.ports.repos.portal.registered(r.bucket, uploaded.dataFileId);
  return xmlAnswer(copyObjectXml(`"${digest}"`, registered?.modifiedAt ?? r.ports.clock()));
}

export async function uploadPartCopy(r: S3Request, key: string, uploadId: string, partNumber: string, header: string) {
  const { store, number } = await partTarget(r, key, uploadId, partNumber);
  const { source, file } = await copySource(r, header, key, false);
  const range = copyRange(r.c.req.header('x-amz-copy-source-range') ?? null, file.size);
  if (range !== null && isCopyRefusal(range)) throw new S3Failure(range.status, range.code, range.message);
  const length = range === null ? 0 : range.end - range.start + 1;
  const bytes = range === null ? null : await sourceBytes(r, source, file, range);
  try {
    const part = await storePart(r, store, uploadId, number, bytes?.stream ?? none(), length);
    return xmlAnswer(copyPartXml(`"${part.md5}"`, r.ports.clock()));
  } finally {
    bytes?.close();
  }
}

/** The copy's source, checked: the user may copy it here, it exists, its preconditions hold. */
async function copySource(r: S3Request, header: string, key: string, wholeObject: boolean) {
  const source = readCopySource(header);
  if (isCopyRefusal(source)) throw new S3Failure(source.status, source.code, source.message);
  // Clients of the virtual-host style name buckets as DNS labels (lower case), the source's too.
  if (r.virtualHost) {
    const named = source.bucket.toLowerCase();
    source.bucket = r.visitor.identity.destinations.find((d) => d.toLowerCase() === named) ?? source.bucket;
  }
  const refused = mayCopy(r.visitor.identity, source, { bucket: r.bucket, key }, wholeObject);
  if (refused !== null) throw new S3Failure(refused.status, refused.code, refused.message);
  // As a download finds it: a held upload is the uploader's own until it is released.
  const viewer = treeViewer(r.visitor.identity);
  const file = await r.ports.repos.portal.file(source.bucket, source.key, r.ports.clock(), viewer);
  if (file === null) throw new S3Failure(404, 'NoSuchKey', 'The specified key does not exist.');
  const condition = (name: string) => r.c.req.header(`x-amz-copy-source-if-${name}`) ?? null;
  const conditions = {
    ifMatch: condition('match'),
    ifNoneMatch: condition('none-match'),
    ifModifiedSince: condition('modified-since'),
    ifUnmodifiedSince: condition('unmodified-since'),
  };
  const failed = copyPreconditions(s3ServedFile(file), conditions, r.ports.clock());
  if (failed !== null) throw new S3Failure(failed.status, failed.code, failed.message);
  return { source, file };
}

/**
 * The source's bytes (a range of them), as a download reads them; a source that cannot be read, or
 * whose size changed since it was registered, refuses the copy before anything is written.
 */
async function sourceBytes(r: S3Request, source: CopySource, file: PortalFile, range: SourceRange | undefined) {
  const reading = new AbortController();
  const unreadable = (why: string, fields: Record<string, unknown>) => {
    reading.abort();
    r.ports.logger.warn('portal copy refused: its source cannot be read', {
      requestId: r.requestId,
      destination: source.bucket,
      path: file.path,
      source: shownSource(file.source),
      ...fields,
    });
    // As a download of it answers (502 there, InternalError over S3).
    return new S3Failure(500, 'InternalError', `${source.key} cannot be copied now: ${why}`);
  };
  let opened: Awaited<ReturnType<typeof openFileBytes>>;
  try {
    const ref = { source: file.source, objectKey: file.objectKey };
    opened = await openFileBytes(r.ports.store, r.options.sources, ref, reading.signal, range);
  } catch (e) {
    throw unreadable('its data is not available', { reason: e instanceof Error ? e.message : String(e) });
  }
  if (opened.size !== file.size) {
    throw unreadable('its data changed since it was registered', { size: opened.size, registered: file.size });
  }
  return { stream: opened.stream, close: () => reading.abort() };
}

async function* hashed(stream: AsyncIterable<Uint8Array>, md5: ReturnType<typeof createHash>) {
  for await (const chunk of stream) {
    md5.update(chunk);
    yield chunk;
  }
}

async function* none(): AsyncIterable<Uint8Array> {}
