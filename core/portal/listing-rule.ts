import { allowed, type PortalSettings } from './options.ts';
import type { PortalOperation } from './ports.ts';

/**
 * What a user may see of the tree, the one rule of every listing (HTTPS, SFTP, S3): the names a
 * directory holds are seen by whoever may list that directory (the `dir` permission, and
 * `portal.dirPathPermRegex` matching the directory's path: a destination's name, then the path
 * below it). A path is seen only in its own directory's listing, so a key of S3 shows exactly when
 * the HTTPS listing of its directory would show it.
 */
export interface Lister {
  permissions: readonly PortalOperation[];
  settings: PortalSettings;
}

/** Whether the user may list this directory (`''`: the destination's own); null: the destinations themselves. */
export function mayList(who: Lister, destination: string | null, directory = ''): boolean {
  if (destination === null) return who.permissions.includes('dir');
  return allowed(who.permissions, who.settings, 'dir', directory === '' ? destination : `${destination}/${directory}`);
}

/**
 * Whether a name below a destination shows in a listing: a file's path, or what names a directory
 * (`a/b/`, or a prefix that ends inside a name, `a/b.`): the directory holding its last name may be listed.
 */
export function mayShow(who: Lister, destination: string, name: string): boolean {
  const trimmed = name.endsWith('/') ? name.slice(0, -1) : name;
  const slash = trimmed.lastIndexOf('/');
  return mayList(who, destination, slash < 0 ? '' : trimmed.slice(0, slash));
}
