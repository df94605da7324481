import type { Ports } from '../ports.ts';
import type { PortalFile, TreeViewer } from './ports.ts';
import { byteOrder, isSafeSegment } from './tree.ts';

/**
 * The portal's tree as S3 shows it: a bucket is one of the user's destinations, an object key is
 * a file's target path. A listing follows ListObjects' rules (prefix, delimiter rolling keys up
 * into common prefixes, a page of at most 1000 keys and prefixes, in byte order, going on after a
 * key) on the tree's repository, which pages by path.
 */

export const MAX_KEYS = 1000;

export interface ObjectListing {
  files: PortalFile[];
  commonPrefixes: string[];
  truncated: boolean;
  /** The last key or common prefix of the page: where the next one goes on from. */
  last: string | null;
}

export interface ListingQuery {
  prefix: string;
  /** Null: every key below the prefix, whatever its depth. */
  delimiter: string | null;
  /** Keys after this one only (a continuation token's key or start-after). */
  after: string | null;
  maxKeys: number;
  /** Whether a key or common prefix may be shown (the listing rule); the others are left out, not counted. */
  visible: (name: string) => boolean;
  /** Whose held uploads show (TreeViewer: the signer's own); left out, none. */
  viewer?: TreeViewer;
}

/** A key the tree can serve: segments that stay where they are (no `..`, no empty one, ...). */
export const isServableKey = (key: string) => key !== '' && key.split('/').every(isSafeSegment);

/** The highest code point: a key cannot go on past it, so `x + LAST` follows every key starting with `x`. */
const LAST = String.fromCodePoint(0x10ffff);

export async function listObjects(ports: Ports, destination: string, query: ListingQuery): Promise<ObjectListing> {
  if (query.maxKeys === 0) return { files: [], commonPrefixes: [], truncated: false, last: null };
  if (query.delimiter === '/' && (query.prefix === '' || query.prefix.endsWith('/'))) {
    return listDirectory(ports, destination, query);
  }
  return listFlat(ports, destination, query);
}

/** A directory's page from the tree's own listing (one level, its subdirectories rolled up). */
async function listDirectory(ports: Ports, destination: string, query: ListingQuery): Promise<ObjectListing> {
  const { prefix } = query;
  let after: string | null = null;
  if (query.after?.startsWith(prefix)) after = query.after.slice(prefix.length);
  else if (query.after != null && byteOrder(query.after, prefix) > 0) {
    // After every key below the prefix.
    return { files: [], commonPrefixes: [], truncated: false, last: null };
  }
  const entries = await ports.repos.portal.list(
    destination,
    prefix,
    ports.clock(),
    { after: after === '' ? null : after, limit: query.maxKeys + 1 },
    query.viewer,
  );
  const listing: ObjectListing = { files: [], commonPrefixes: [], truncated: false, last: null };
  for (const entry of entries) {
    if (!isSafeSegment(entry.name)) continue;
    const name = entry.type === 'file' ? entry.file.path : `${prefix}${entry.name}/`;
    if (!query.visible(name)) continue;
    if (listing.files.length + listing.commonPrefixes.length === query.maxKeys) {
      listing.truncated = true;
      break;
    }
    if (entry.type === 'file') {
      listing.files.push(entry.file);
      listing.last = entry.file.path;
    } else {
      listing.last = `${prefix}${entry.name}/`;
      listing.commonPrefixes.push(listing.last);
    }
  }
  return listing;
}

/**
 * Every key below the prefix in byte order, with keys holding the delimiter after the prefix
 * rolled up into one common prefix each (the next read goes on past all of its keys).
 */
async function listFlat(ports: Ports, destination: string, query: ListingQuery): Promise<ObjectListing> {
  const { prefix, delimiter } = query;
  const listing: ObjectListing = { files: [], commonPrefixes: [], truncated: false, last: null };
  const rolledUp = (key: string) => {
    if (delimiter === null || delimiter === '') return null;
    const at = key.indexOf(delimiter, prefix.length);
    return at < 0 ? null : key.slice(0, at + delimiter.length);
  };
  // A token naming a common prefix goes on past all of its keys.
  let after = query.after !== null && rolledUp(query.after) === query.after ? `${query.after}${LAST}` : query.after;
  const batch = Math.min(query.maxKeys + 1, MAX_KEYS + 1);
  for (;;) {
    const files = await ports.repos.portal.files(
      destination,
      prefix,
      ports.clock(),
      { after, limit: batch },
      query.viewer,
    );
    let skipped = false;
    for (const file of files) {
      after = file.path;
      if (!isServableKey(file.path)) continue;
      const common = rolledUp(file.path);
      if (common !== null && !query.visible(common)) {
        // A prefix that may not be shown: on past all of its keys.
        after = `${common}${LAST}`;
        skipped = true;
        break;
      }
      if (common === null && !query.visible(file.path)) continue;
      if (listing.files.length + listing.commonPrefixes.length === query.maxKeys) {
        listing.truncated = true;
        return listing;
      }
      if (common === null) {
        listing.files.push(file);
        listing.last = file.path;
        continue;
      }
      listing.commonPrefixes.push(common);
      listing.last = common;
      after = `${common}${LAST}`;
      skipped = true;
      break;
    }
    if (!skipped && files.length < batch) return listing;
  }
}
