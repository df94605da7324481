import type { PortalIdentity } from '../../core/portal/access.ts';
import { type FileSums, knownSums, maySum } from '../../core/portal/file-sums.ts';
import { sftpPlace, sftpSegments } from '../../core/portal/sftp-paths.ts';
import { treeViewer } from '../../core/portal/uploads.ts';
import type { Ports } from '../../core/ports.ts';

/** What a path of the user's tree holds, for its sums: a file and its size, or why there are none. */
export type SumsAt =
  | { kind: 'file'; size: number; sums: FileSums }
  | { kind: 'missing' }
  | { kind: 'denied' }
  | { kind: 'directory' };

/**
 * The sums of the file at an SFTP path (a command's operand, a `check-file-name`), under the rules
 * of reading it (subsystem.ts's OPEN): another user's destination is as missing as one that does
 * not exist, then the `get` permission and path rule, then the file or a directory.
 */
export async function sumsAt(ports: Ports, who: PortalIdentity, path: string): Promise<SumsAt> {
  const segments = sftpSegments(path);
  if (segments === null) return { kind: 'missing' };
  const place = sftpPlace(segments);
  if (place.kind !== 'root' && !who.destinations.includes(place.destination)) return { kind: 'missing' };
  if (place.kind !== 'below') return { kind: 'directory' };
  if (!maySum(who, place.destination, place.path)) return { kind: 'denied' };
  // The tree as a read sees it: the user's own held uploads among the files.
  const [now, viewer] = [ports.clock(), treeViewer(who)];
  const file = await ports.repos.portal.file(place.destination, place.path, now, viewer);
  if (file !== null) return { kind: 'file', size: file.size, sums: knownSums(file) };
  const page = { after: null, limit: 1 };
  const below = await ports.repos.portal.list(place.destination, `${place.path}/`, now, page, viewer);
  return below.length > 0 ? { kind: 'directory' } : { kind: 'missing' };
}
