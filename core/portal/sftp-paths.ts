import { isSafeSegment } from './tree.ts';

/**
 * The portal's tree as SFTP paths name it: `/` holds one directory per destination of the user,
 * below which the files are by target path. A client's path is read as a chrooted server reads it:
 * relative paths start at `/`, `.` and `..` are resolved by name and `..` never goes above `/`, so
 * no path leads outside the user's tree. Pure.
 */

/** The segments of a path below `/`; null when one could not be a name in the tree (see isSafeSegment). */
export function sftpSegments(path: string): string[] | null {
  const segments: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      segments.pop();
      continue;
    }
    if (!isSafeSegment(part)) return null;
    segments.push(part);
  }
  return segments;
}

/** The absolute path of segments, as REALPATH answers it. */
export const sftpPath = (segments: readonly string[]) => `/${segments.join('/')}`;

/** Where a path leads: the root, a destination's directory, or a path below one. */
export type SftpPlace =
  | { kind: 'root' }
  | { kind: 'destination'; destination: string }
  | { kind: 'below'; destination: string; path: string };

export function sftpPlace(segments: readonly string[]): SftpPlace {
  const [destination, ...rest] = segments;
  if (destination === undefined) return { kind: 'root' };
  if (rest.length === 0) return { kind: 'destination', destination };
  return { kind: 'below', destination, path: rest.join('/') };
}

/** The path an operation's path rule (`portal.<op>PathPermRegex`) judges: `<destination>/<path>`. */
export const ruledPath = (place: Exclude<SftpPlace, { kind: 'root' }>) =>
  place.kind === 'destination' ? place.destination : `${place.destination}/${place.path}`;

/**
 * The default of a destination's `incoming.tmpPattern`: a name with a leading `.` or ending with
 * `.tmp` is an upload still under way, registered in standby until it is renamed.
 */
export const DEFAULT_TMP_PATTERN = String.raw`\..*|.*\.tmp`;
