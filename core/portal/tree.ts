import type { PortalIdentity } from './access.ts';
import type { PortalEntry } from './ports.ts';

/**
 * The portal's tree as URLs show it, below its base (`/portal/data/`, or `/portal/home/<user>/` for
 * open access): one directory per destination of the user, then the destination's files by target
 * path. Pure: the transports parse their paths here and render the rows.
 */

/** A path below the tree's base: its decoded segments, and whether it ended with '/'. */
export interface TreePath {
  segments: string[];
  slash: boolean;
}

/**
 * Reads the still-encoded path below the base. Null when a segment could reach outside the tree or
 * name something no target can hold: empty, `.` or `..` (also encoded), an encoded '/', a
 * backslash, a control character, or bad percent-encoding.
 */
export function parseTreePath(encoded: string): TreePath | null {
  if (encoded === '') return { segments: [], slash: true };
  const raw = encoded.split('/');
  const slash = raw.at(-1) === '';
  if (slash) raw.pop();
  const segments: string[] = [];
  for (const part of raw) {
    let segment: string;
    try {
      segment = decodeURIComponent(part);
    } catch {
      return null;
    }
    if (!isSafeSegment(segment)) return null;
    segments.push(segment);
  }
  return { segments, slash };
}

/** A name that stays one step down wherever it is joined: in a URL, a target or a local path. */
export function isSafeSegment(segment: string): boolean {
  return (
    segment !== '' &&
    segment !== '.' &&
    segment !== '..' &&
    !segment.includes('/') &&
    !segment.includes('\\') &&
    !/[\u0000-\u001f\u007f]/.test(segment)
  );
}

/**
 * Where a tree path leads. A path with a destination and nothing after it is that destination's
 * directory: without its '/' it is answered by a redirect to it, as any directory's URL is.
 */
export type TreeTarget =
  | { kind: 'root' }
  | { kind: 'directory'; destination: string; prefix: string; slash: boolean }
  | { kind: 'file'; destination: string; path: string };

export function treeTarget(path: TreePath): TreeTarget {
  const [destination, ...rest] = path.segments;
  if (destination === undefined) return { kind: 'root' };
  const joined = rest.join('/');
  if (path.slash || rest.length === 0) {
    return { kind: 'directory', destination, prefix: joined === '' ? '' : `${joined}/`, slash: path.slash };
  }
  return { kind: 'file', destination, path: joined };
}

/** Segments as a URL path: each one percent-encoded, ':' too (a relative link must not read as a scheme). */
export const encodePath = (segments: readonly string[]) => segments.map(encodeSegment).join('/');
export const encodeSegment = (segment: string) => encodeURIComponent(segment).replace(/:/g, '%3A');

/**
 * One row of a listing: size and time only for a user with the `size` and `mtime` permissions; a
 * directory's time is its newest file's (core/portal/folders.ts), when the listing read it; its
 * files counted only for the HTML page (withFolderFiles there).
 */
export interface ListingRow {
  name: string;
  type: 'file' | 'directory';
  size: number | null;
  lastModified: Date | null;
  files?: FolderFiles;
}

/** A directory's files at any depth: `count` exactly, or at least `count` (the cap) and `more` beyond it. */
export interface FolderFiles {
  count: number;
  more: boolean;
}

export function listingRows(entries: readonly PortalEntry[], who: Pick<PortalIdentity, 'permissions'>): ListingRow[] {
  const size = who.permissions.includes('size');
  const mtime = who.permissions.includes('mtime');
  return entries.map((e) =>
    e.type === 'directory'
      ? { name: e.name, type: 'directory', size: null, lastModified: mtime ? (e.modifiedAt ?? null) : null }
      : {
          name: e.name,
          type: 'file',
          size: size ? e.file.size : null,
          lastModified: mtime ? e.file.modifiedAt : null,
        },
  );
}

export const DEFAULT_PAGE = 1000;
export const MAX_PAGE = 10_000;

/** `?limit=` and `?after=` of a listing; a message when one is not what a page takes. */
export function readPage(query: { limit?: string; after?: string }): { limit: number; after: string | null } | string {
  let limit = DEFAULT_PAGE;
  if (query.limit !== undefined) {
    if (!/^\d{1,6}$/.test(query.limit) || Number(query.limit) < 1 || Number(query.limit) > MAX_PAGE) {
      return `Invalid value for parameter limit: '${query.limit}' (1 to ${MAX_PAGE} expected)`;
    }
    limit = Number(query.limit);
  }
  const after = query.after === undefined || query.after === '' ? null : query.after;
  return { limit, after };
}

/** The cursor of the page after the one ending with `row`: a directory's name carries its '/'. */
export const cursorAfter = (row: Pick<ListingRow, 'name' | 'type'>) =>
  row.type === 'directory' ? `${row.name}/` : row.name;

/** The destinations' directories of the root listing, a page of them in byte order. */
export function destinationEntries(destinations: readonly string[], page: { after: string | null; limit: number }) {
  const after = page.after?.replace(/\/$/, '') ?? null;
  return [...destinations]
    .sort(byteOrder)
    .filter((name) => after === null || byteOrder(name, after) > 0)
    .slice(0, page.limit)
    .map((name): PortalEntry => ({ type: 'directory', name }));
}

/** The order of `collate "C"` (UTF-8 bytes), which the listings of files follow too. */
export function byteOrder(a: string, b: string): number {
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

const utf8 = new TextEncoder();
