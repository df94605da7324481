import type { PortalIdentity } from './access.ts';
import { servedFile } from './download.ts';
import type { PortalFile } from './ports.ts';
import { mayStill } from './revocation.ts';

/**
 * A file's sums as SFTP offers them (the `md5sum` and `sha512sum` commands, the `check-file`
 * extension): the ones every protocol serves it with (servedFile: measured as its stored copy was
 * written, or an MD5 recorded before), never computed on request. Computing one would read the
 * whole file from its source for a client that asked for no download, outside the user's quota and
 * connection limit; and rclone falls back to a hash it is offered (MD5) when another (SHA-1) is
 * not. Pure.
 */

export type SumAlgorithm = 'md5' | 'sha512';

/** The algorithms a file may have a sum of, by the names of the check-file extension. */
export const SUM_ALGORITHMS: readonly SumAlgorithm[] = ['md5', 'sha512'];

/** The sums known of a file, in hex; an algorithm without one is absent. */
export type FileSums = Partial<Record<SumAlgorithm, string>>;

export function knownSums(file: Pick<PortalFile, 'size' | 'checksum' | 'stored' | 'modifiedAt'>): FileSums {
  const served = servedFile(file);
  const sums: FileSums = {};
  if (served.md5 !== null) sums.md5 = served.md5;
  if (served.sha512 !== null) sums.sha512 = hexOf(served.sha512);
  return sums;
}

const hexOf = (base64: string) => [...atob(base64)].map((c) => c.charCodeAt(0).toString(16).padStart(2, '0')).join('');

/**
 * Whether the user may read a file's sums: what reading the file takes (its destination one of the
 * user's, the `get` permission and `portal.getPathPermRegex`). Reading sums is not a download: no
 * transfer, no INH line, nothing against the quota.
 */
export const maySum = (who: PortalIdentity, destination: string, path: string) =>
  mayStill(who, 'get', destination, path);

/** A check-file request's range and algorithms (draft-ietf-secsh-filexfer-extensions-00, section 3). */
export interface CheckFileRequest {
  /** The client's algorithms, comma-separated, in its order of preference. */
  algorithms: string;
  start: bigint;
  /** 0: to the end of the file. */
  length: bigint;
  /** 0: one hash of the whole range; else one per block of this many bytes (at least 256). */
  blockSize: number;
}

export type CheckFileAnswer =
  | { kind: 'sum'; algorithm: SumAlgorithm; hex: string }
  | { kind: 'unsupported'; message: string }
  | { kind: 'invalid'; message: string };

/**
 * The answer to a check-file request: the first algorithm of the client's list the file has a sum
 * of. Only the whole file's sums are known, so a range that is not the whole file, or blocks smaller
 * than it, are not supported (the client may read the bytes instead).
 */
export function answerCheckFile(request: CheckFileRequest, size: number, sums: FileSums): CheckFileAnswer {
  if (request.blockSize !== 0 && request.blockSize < 256) {
    return { kind: 'invalid', message: 'block-size must be 0 or at least 256' };
  }
  const whole =
    request.start === 0n &&
    (request.length === 0n || request.length >= BigInt(size)) &&
    (request.blockSize === 0 || request.blockSize >= size);
  if (!whole) return { kind: 'unsupported', message: "Only the whole file's sums are known here" };
  const wanted = request.algorithms.split(',').map((a) => a.trim());
  for (const algorithm of wanted) {
    const hex = (SUM_ALGORITHMS as readonly string[]).includes(algorithm) ? sums[algorithm as SumAlgorithm] : undefined;
    if (hex !== undefined) return { kind: 'sum', algorithm: algorithm as SumAlgorithm, hex };
  }
  const known = SUM_ALGORITHMS.filter((a) => sums[a] !== undefined);
  return {
    kind: 'unsupported',
    message:
      known.length === 0
        ? 'No checksum is known for this file yet'
        : `No checksum of ${request.algorithms} is known for this file (known: ${known.join(', ')})`,
  };
}
