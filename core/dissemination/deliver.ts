import { invalid } from '../common/errors.ts';
import { bytesToHex, type Hashing } from '../common/hashing.ts';
import type { TemporaryName } from './method-options.ts';
import type { AttemptFence } from './methods.ts';

/**
 * A host seen as files under a directory: what a transfer method that writes by name (file,
 * SFTP, FTP) offers, so that the order of steps below is the same for all of them.
 */
export interface RemoteFiles {
  makeDirectories(directory: string): Promise<void>;
  /** Writes the source under `path`, replacing what is there; answers the bytes written. */
  write(path: string, source: AsyncIterable<Uint8Array>, signal: AbortSignal): Promise<number>;
  /** The size of `path`, or null when it does not exist. */
  size(path: string): Promise<number | null>;
  /** Renames `from` to `to`, replacing `to`. */
  rename(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
}

export interface Delivery {
  /** The host's target directory (`dir`); empty for the login's home. */
  directory: string;
  /** The file's name there, which may hold subdirectories. */
  target: string;
  /** The size registered with the data file: the source must still have it. */
  registeredSize: number;
  /** The MD5 hex of the source's bytes when known before the send (a stored copy's): not hashed again. */
  knownMd5?: string | null;
  temporary: TemporaryName;
  makeDirectories: boolean;
  ignoreCheck: boolean;
  fence?: AttemptFence;
  /** Write `<final name><ext>` with the MD5 hex of the delivered bytes (`md5Ext`); null for none. */
  sidecarExtension?: string | null;
  /** The host's compression filter: the source's bytes pass through it on their way out. */
  filter?: DeliveryFilter | null;
  /** The method's own steps around the upload (raw FTP commands, a command over SSH). */
  steps?: DeliverySteps;
}

export interface DeliveryFilter {
  name: string;
  /** Compresses as the bytes stream: never the whole file in memory. */
  transform: (source: AsyncIterable<Uint8Array>) => AsyncIterable<Uint8Array>;
}

export interface DeliverySteps {
  /** Before anything is written, with the final path. */
  beforeWrite?(finalPath: string): Promise<void>;
  /** Once the bytes are written and checked, before the rename, with the path written. */
  afterWrite?(writtenPath: string): Promise<void>;
  /** Once the file (and its sidecar) are in place. */
  afterPlaced?(finalPath: string, sidecarPath: string | null): Promise<void>;
}

export interface Delivered {
  /** Bytes delivered: the filtered size when a filter applied. */
  sent: number;
  /** MD5 of the source's bytes, in hex; null when the method read none (portal). */
  md5: string | null;
  /** The filter applied, with the size and MD5 of the bytes it produced. */
  filter?: { name: string; size: number; md5: string };
}

export const joinRemote = (directory: string, name: string) =>
  directory === '' ? name : `${directory.replace(/\/+$/, '')}/${name.replace(/^\/+/, '')}`;

/**
 * Delivers one file: written under a temporary name, its size checked against the bytes sent
 * and the registered size, then renamed into place; nothing half-written ever carries the final
 * name. On any failure the temporary file is removed (best effort) and the error goes on.
 */
export async function deliverFile(
  remote: RemoteFiles,
  delivery: Delivery,
  source: AsyncIterable<Uint8Array>,
  signal: AbortSignal,
  hashing: Hashing,
): Promise<Delivered> {
  const finalPath = joinRemote(delivery.directory, delivery.target);
  const slash = finalPath.lastIndexOf('/');
  const parent = slash > 0 ? finalPath.slice(0, slash) : '';
  const base = finalPath.slice(slash + 1);
  const { use, prefix, suffix } = delivery.temporary;
  const { fence } = delivery;
  const temporaryPath = (tag: string) => joinRemote(parent, `${prefix}${base}${tag}${suffix}`);
  const writePath = use ? temporaryPath(fence?.tag ?? '') : finalPath;

  if (delivery.makeDirectories && parent !== '') await remote.makeDirectories(parent);
  // What attempts cut off before their clean-up left behind (they never rename it into place).
  if (use && fence) await removeEach(remote, fence.previousTags.map(temporaryPath));
  await delivery.steps?.beforeWrite?.(finalPath);
  const counted = countingMd5(hashing, source, delivery.knownMd5);
  const filter = delivery.filter ?? null;
  const out = filter ? countingMd5(hashing, filter.transform(counted.stream)) : counted;
  try {
    fence?.throwIfLapsing();
    const written = await remote.write(writePath, out.stream, signal);
    const read = counted.bytes();
    if (read !== delivery.registeredSize) {
      throw invalid(`Source changed size: ${read} bytes read, ${delivery.registeredSize} registered`);
    }
    const sent = out.bytes();
    if (written !== sent) throw invalid(`Transfer aborted at ${percent(written, sent)}%`);
    if (!delivery.ignoreCheck) {
      const remoteSize = await remote.size(writePath);
      if (remoteSize !== sent) throw invalid(`Transfer aborted at ${percent(remoteSize ?? 0, sent)}%`);
    }
    await delivery.steps?.afterWrite?.(writePath);
    // Without a temporary name the final one was written already: the fence can only guard a rename.
    if (use) {
      await fence?.confirm();
      await remote.rename(writePath, finalPath);
    }
    const md5 = counted.md5();
    const sentMd5 = filter ? out.md5() : md5;
    const sidecar = await writeSidecar(remote, delivery, finalPath, sentMd5, signal);
    await delivery.steps?.afterPlaced?.(finalPath, sidecar);
    return filter ? { sent, md5, filter: { name: filter.name, size: sent, md5: sentMd5 } } : { sent, md5 };
  } catch (error) {
    if (use) await remote.remove(writePath).catch(() => undefined);
    throw error;
  }
}

/**
 * The `md5Ext` sidecar: the MD5 hex of the delivered bytes, nothing else (the reference writes the
 * checksum's bytes alone). Under a temporary name then renamed too, so that a reader who sees
 * `<name>.md5` never reads half of it.
 */
async function writeSidecar(
  remote: RemoteFiles,
  delivery: Delivery,
  finalPath: string,
  md5: string,
  signal: AbortSignal,
): Promise<string | null> {
  const extension = delivery.sidecarExtension ?? null;
  if (extension === null) return null;
  const sidecarPath = `${finalPath}${extension}`;
  const slash = sidecarPath.lastIndexOf('/');
  const { use, prefix, suffix } = delivery.temporary;
  const temporaryName = `${prefix}${sidecarPath.slice(slash + 1)}${delivery.fence?.tag ?? ''}${suffix}`;
  const writePath = use ? `${sidecarPath.slice(0, slash + 1)}${temporaryName}` : sidecarPath;
  const content = new TextEncoder().encode(md5);
  async function* bytes() {
    yield content;
  }
  try {
    await remote.write(writePath, bytes(), signal);
    if (writePath !== sidecarPath) await remote.rename(writePath, sidecarPath);
  } catch (error) {
    if (writePath !== sidecarPath) await remote.remove(writePath).catch(() => undefined);
    throw error;
  }
  return sidecarPath;
}

/** Removes the files (best effort, a missing one is no error), a few requests at a time. */
async function removeEach(remote: RemoteFiles, paths: string[]) {
  for (let at = 0; at < paths.length; at += REMOVALS_AT_ONCE) {
    const some = paths.slice(at, at + REMOVALS_AT_ONCE);
    await Promise.all(some.map((file) => remote.remove(file).catch(() => undefined)));
  }
}

const REMOVALS_AT_ONCE = 32;

const percent = (part: number, whole: number) => (whole === 0 ? 0 : Math.floor((100 * part) / whole));

/**
 * Passes the source through, counting its bytes and hashing them as they go; with `knownMd5` (a
 * stored copy's, computed when it was retrieved) only counting, and answering that MD5.
 */
export function countingMd5(hashing: Hashing, source: AsyncIterable<Uint8Array>, knownMd5?: string | null) {
  const hash = knownMd5 ? null : hashing.digest('md5');
  let bytes = 0;
  async function* stream() {
    for await (const chunk of source) {
      hash?.update(chunk);
      bytes += chunk.byteLength;
      yield chunk;
    }
  }
  return { stream: stream(), bytes: () => bytes, md5: () => (hash ? bytesToHex(hash.digest()) : (knownMd5 as string)) };
}
