/**
 * How the data portal answers a download (GET or HEAD of a file), as RFC 9110 has download tools
 * expect it: validators (`ETag`, `Last-Modified` as an HTTP-date never later than `Date`), the
 * preconditions in the RFC's order (§13.2.2), byte ranges (§14) with `If-Range`, and the digest of
 * the whole file (`Repr-Digest`, RFC 9530). Pure: the transport sends the bytes of `range` (or none
 * for HEAD) with these headers.
 */
import type { PortalFile } from './ports.ts';

/** A file as the portal serves it. */
export interface ServedFile {
  size: number;
  /** The MD5 of its bytes (hex) when known: the strong entity tag. */
  md5: string | null;
  /** The SHA-512 of its bytes (base64) when known: its `Repr-Digest`. */
  sha512: string | null;
  lastModified: Date;
  /** The entity tag of a file whose MD5 is not known, where one is always due (S3's objects); none when left out. */
  tag?: string | null;
}

const MD5 = /^[0-9a-f]{32}$/i;

/**
 * The sums a file is served with, by every protocol of the portal: those measured as its stored copy
 * was written once it was retrieved (the bytes the portal serves); before that, the MD5 recorded of
 * it (by a delivery, or an upload) if any, and no SHA-512.
 */
export function servedFile(file: Pick<PortalFile, 'size' | 'checksum' | 'stored' | 'modifiedAt'>): ServedFile {
  const recorded = file.checksum !== null && MD5.test(file.checksum) ? file.checksum.toLowerCase() : null;
  return {
    size: file.size,
    md5: file.stored ? file.stored.md5.toLowerCase() : recorded,
    sha512: file.stored?.sha512 ?? null,
    lastModified: file.modifiedAt,
  };
}

/** A file's entity tag as HTTP and S3 send it (S3's of a single-part object): its MD5 quoted, else its `tag`. */
export const entityTagOf = (file: Pick<ServedFile, 'md5' | 'tag'>) =>
  file.md5 === null ? (file.tag ?? null) : `"${file.md5.toLowerCase()}"`;

/** The request's headers that decide the answer, by lower-case name. */
export interface DownloadRequest {
  method: 'GET' | 'HEAD';
  range?: string | null;
  ifRange?: string | null;
  ifMatch?: string | null;
  ifNoneMatch?: string | null;
  ifModifiedSince?: string | null;
  ifUnmodifiedSince?: string | null;
}

/** Bytes `start` to `end`, both included. */
export interface ByteRange {
  start: number;
  end: number;
}

export type DownloadAnswer =
  | { status: 200; headers: Record<string, string>; range: ByteRange | null }
  | { status: 206; headers: Record<string, string>; range: ByteRange }
  | { status: 304 | 412 | 416; headers: Record<string, string>; range: null };

export function answerDownload(file: ServedFile, request: DownloadRequest, now: Date): DownloadAnswer {
  const etag = entityTagOf(file);
  const digest: Record<string, string> = file.sha512 === null ? {} : { 'repr-digest': `sha-512=:${file.sha512}:` };
  // An HTTP-date has whole seconds, and a time later than the answer's own Date is not believed.
  const modifiedSeconds = Math.floor(Math.min(file.lastModified.getTime(), now.getTime()) / 1000);
  const validators: Record<string, string> = { 'last-modified': new Date(modifiedSeconds * 1000).toUTCString() };
  if (etag !== null) validators.etag = etag;
  const headers = { ...validators, ...digest, 'accept-ranges': 'bytes' };

  const failed = preconditionFailed(request, etag, modifiedSeconds);
  if (failed === 412) return { status: 412, headers: {}, range: null };
  if (failed === 304) return { status: 304, headers: validators, range: null };

  const whole = file.size === 0 ? null : { start: 0, end: file.size - 1 };
  const full = { status: 200 as const, headers: { ...headers, 'content-length': String(file.size) }, range: whole };
  if (!request.range || !rangeStillApplies(request.ifRange, etag, modifiedSeconds)) return full;
  const range = parseRange(request.range, file.size);
  if (range === 'ignored') return full;
  if (range === 'unsatisfiable') {
    return { status: 416, headers: { 'accept-ranges': 'bytes', 'content-range': `bytes */${file.size}` }, range: null };
  }
  return {
    status: 206,
    headers: {
      ...headers,
      'content-length': String(range.end - range.start + 1),
      'content-range': `bytes ${range.start}-${range.end}/${file.size}`,
    },
    range,
  };
}

/** The preconditions of §13.2.2, in order: 412, 304, or null to go on. */
function preconditionFailed(request: DownloadRequest, etag: string | null, modifiedSeconds: number) {
  if (request.ifMatch) {
    if (!matchesAny(request.ifMatch, etag, 'strong')) return 412;
  } else if (request.ifUnmodifiedSince) {
    const since = httpDateSeconds(request.ifUnmodifiedSince);
    if (since !== null && modifiedSeconds > since) return 412;
  }
  if (request.ifNoneMatch) return matchesAny(request.ifNoneMatch, etag, 'weak') ? 304 : null;
  if (request.ifModifiedSince) {
    const since = httpDateSeconds(request.ifModifiedSince);
    if (since !== null && modifiedSeconds <= since) return 304;
  }
  return null;
}

/** `If-Range`: the range is sent only while the file is the one the client has part of (§13.1.5). */
function rangeStillApplies(ifRange: string | null | undefined, etag: string | null, modifiedSeconds: number) {
  if (!ifRange) return true;
  const value = ifRange.trim();
  if (value.startsWith('"') || value.startsWith('W/')) return etag !== null && value === etag;
  return httpDateSeconds(value) === modifiedSeconds;
}

/** A list of entity tags or `*`; weak comparison ignores `W/`, strong never matches a weak tag. */
function matchesAny(list: string, etag: string | null, comparison: 'weak' | 'strong') {
  if (list.trim() === '*') return true;
  if (etag === null) return false;
  return (list.match(/(W\/)?"[^"]*"/g) ?? []).some((tag) =>
    tag.startsWith('W/') ? comparison === 'weak' && tag.slice(2) === etag : tag === etag,
  );
}

/**
 * One range of `bytes=`: `first-last`, `first-`, or the last `-n` bytes; a last beyond the end is
 * the end. Several ranges, another unit or a malformed value are ignored (the whole file is sent,
 * as the RFC allows); a range that starts past the end is unsatisfiable.
 */
export function parseRange(header: string, size: number): ByteRange | 'ignored' | 'unsatisfiable' {
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match) return 'ignored';
  const [, first, last] = match;
  if (first === '' && last === '') return 'ignored';
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return 'ignored';
  if (start >= size) return 'unsatisfiable';
  return { start, end: last === '' ? size - 1 : Math.min(Number(last), size - 1) };
}

/** An HTTP-date (IMF-fixdate, or the obsolete forms Date.parse reads) in whole seconds; null if it is none. */
function httpDateSeconds(value: string) {
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}
