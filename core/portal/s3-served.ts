import { type ServedFile, servedFile } from './download.ts';
import type { PortalFile } from './ports.ts';

/**
 * A file as S3 serves it: every S3 object has an ETag, and clients count on it (s3cmd fails a
 * download without one). A file whose MD5 is not known (never retrieved, nor uploaded) gets one made
 * of what changes with it, its data file and time, in the form of a multipart upload's (`-1`), which
 * clients know is no MD5 of the bytes: they then check a download by its size, not by this tag.
 */
export function s3ServedFile(
  file: Pick<PortalFile, 'dataFileId' | 'size' | 'checksum' | 'stored' | 'modifiedAt'>,
): ServedFile {
  const hex = (n: number) => Math.max(0, Math.trunc(n)).toString(16).padStart(16, '0');
  return { ...servedFile(file), tag: `"${hex(file.dataFileId)}${hex(file.modifiedAt.getTime())}-1"` };
}
