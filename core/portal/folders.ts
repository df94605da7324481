import type { Ports } from '../ports.ts';
import type { PortalIdentity } from './access.ts';
import { allowed } from './options.ts';
import type { PortalEntry } from './ports.ts';
import { destinationEntries, type ListingRow } from './tree.ts';
import { treeViewer } from './uploads.ts';

/**
 * The portal's directories, the same on every protocol. They are virtual: one is there while a file
 * is below it, and making one stores nothing. A directory's time is its newest file's (at any depth,
 * as the user sees them); a destination's own directory without a file takes the destination's
 * creation. Times are shown only with the `mtime` permission, as files' are. A folder's page also
 * counts each folder's files (withFolderFiles).
 */

type Who = Pick<PortalIdentity, 'userId' | 'mode' | 'permissions' | 'settings' | 'destinations'>;

/**
 * Whether the user may make the directory `path` of a destination (SFTP's MKDIR, an S3 folder
 * marker): with `put`, anywhere, as a put makes the directories of its path (clients such as rclone
 * and `scp -r` make them first); each file put in it is still judged by the put rule, which is not
 * judged on the directory: no regular expression tells whether some path below a directory would
 * match it. Without `put`, the `mkdir` permission under its own path rule.
 */
export function mayMakeDirectory(who: Pick<Who, 'permissions' | 'settings'>, destination: string, path: string) {
  return who.permissions.includes('put') || allowed(who.permissions, who.settings, 'mkdir', `${destination}/${path}`);
}

const showsTimes = (who: Pick<Who, 'permissions'>) => who.permissions.includes('mtime');

/** A page of a destination's directory as the user sees it: its held uploads, its directories' times. */
export function listFolder(
  ports: Ports,
  who: Who,
  destination: string,
  prefix: string,
  page: { after: string | null; limit: number },
) {
  const times = showsTimes(who);
  return ports.repos.portal.list(destination, prefix, ports.clock(), { ...page, times }, treeViewer(who));
}

/** A page of the root: the user's destinations' directories, with their times when the user sees times. */
export async function listDestinations(ports: Ports, who: Who, page: { after: string | null; limit: number }) {
  const entries = destinationEntries(who.destinations, page);
  if (!showsTimes(who) || entries.length === 0) return entries;
  const folders = entries.map((e) => ({ destination: e.name, path: '' }));
  const times = await ports.repos.portal.folderTimes(folders, ports.clock(), treeViewer(who));
  return entries.map((e, i): PortalEntry => ({ type: 'directory', name: e.name, modifiedAt: times[i] ?? null }));
}

/**
 * A directory's time: below a destination (path '' for the destination's own), or the root's (null
 * destination), the newest of the user's destinations'. Null when the user does not see times.
 */
export async function folderTime(ports: Ports, who: Who, destination: string | null, path = '') {
  if (!showsTimes(who)) return null;
  const folders =
    destination === null ? who.destinations.map((d) => ({ destination: d, path: '' })) : [{ destination, path }];
  const times = await ports.repos.portal.folderTimes(folders, ports.clock(), treeViewer(who));
  return times.reduce<Date | null>((newest, t) => (t !== null && (newest === null || t > newest) ? t : newest), null);
}

/** The most files a folder's page counts in a folder: beyond, it says "1,000+ files". */
export const FOLDER_FILES_CAP = 1000;

/**
 * The rows of a folder's HTML page (of the destinations' root: `destination` null), each directory
 * with its files at any depth as the user sees them (FolderFiles), one statement for the page, each
 * folder counted up to the cap: a folder costs no more than the cap however many files it holds.
 * Only for the HTML page: the JSON and CSV listings, SFTP and S3 do not count.
 *
 * Only for a user with the `size` permission: a folder's count is how much it holds, as a file's
 * size is, and a user kept from sizes sees no count either. The count is at any depth, as the
 * folder's time is: a `dir` path rule that hides a subfolder's names does not take its files out.
 */
export async function withFolderFiles(
  ports: Ports,
  who: Who,
  destination: string | null,
  prefix: string,
  rows: readonly ListingRow[],
): Promise<ListingRow[]> {
  const directories = rows.filter((r) => r.type === 'directory');
  if (!who.permissions.includes('size') || directories.length === 0) return [...rows];
  const folders = directories.map((r) =>
    destination === null ? { destination: r.name, path: '' } : { destination, path: `${prefix}${r.name}` },
  );
  const cap = FOLDER_FILES_CAP;
  const counts = await ports.repos.portal.folderCounts(folders, ports.clock(), treeViewer(who), cap);
  const files = new Map(directories.map((r, i) => [r, counts[i] ?? 0]));
  return rows.map((r) => {
    const count = files.get(r);
    return count === undefined ? r : { ...r, files: { count: Math.min(count, cap), more: count > cap } };
  });
}
