import fs from 'node:fs';
import path from 'node:path';
import { finished } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { invalid } from '../../core/common/errors.ts';
import type { SourceProber } from '../../core/data-files/ports.ts';
import { isR2Source, r2SourceOnWorkersOnly } from '../../core/data-files/r2-sources.ts';
import { httpSourceProber, httpSourceReader, isRemoteSource, shownSource } from '../../core/data-files/sources.ts';
import type { SourceReader } from '../../core/dissemination/mover.ts';

/**
 * Local sources must resolve (symlinks followed) to a regular file inside one of the roots;
 * `..` segments are refused outright. http(s) sources go to the allow-listed prober; R2 objects are
 * refused (only a Worker has the buckets' bindings).
 * Nothing is remembered between probes: a directory swapped for a link is judged by what it
 * points to now.
 */
export function nodeSourceProber(options: {
  roots: readonly string[];
  hosts: readonly string[];
  timeoutMs: number;
}): SourceProber {
  const http = httpSourceProber(options.hosts, options.timeoutMs);
  return {
    async probe(raw) {
      if (isRemoteSource(raw)) return http.probe(raw);
      if (isR2Source(raw)) throw r2SourceOnWorkersOnly(raw);
      // Measured on the file opened and checked as a send opens it: no swap tells the size of another.
      const { size, file } = await openLocalSource(options.roots, raw);
      await file.close();
      return { size };
    },
  };
}

/**
 * Opens a local source to send it: resolved and checked as at registration, then opened (never
 * following a link in its last step, never waiting on a FIFO) and checked again on the open
 * descriptor: the path the kernel holds for it must lie inside a root. A directory swapped for a
 * link between the check and the open thus cannot make it read a file elsewhere, whatever the
 * interleaving. Where the descriptor's path cannot be read (no /proc), local sources are refused.
 */
export async function openLocalSource(roots: readonly string[], raw: string) {
  const { real, shown, realRootList } = await containedRealPath(roots, raw);
  const file = await fs.promises.open(real, OPEN_FLAGS).catch(() => {
    throw invalid(`Source ${shown} not found`);
  });
  try {
    const opened = await openedPath(file.fd, shown);
    if (opened === null) throw invalid(`Source ${shown} not found`);
    if (!insideRoots(realRootList, opened)) {
      throw invalid(`Source ${shown} not allowed: outside the configured source roots`);
    }
    const stat = await file.stat();
    if (!stat.isFile()) throw invalid(`Source ${shown} not allowed: not a regular file`);
    return { size: stat.size, file };
  } catch (error) {
    await file.close().catch(() => undefined);
    throw error;
  }
}

const OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

/**
 * The path the kernel holds for an open descriptor (links resolved: where the file really is),
 * null when the file was removed since. Read from /proc/self/fd; without it the check cannot be
 * made, and the source is refused rather than read unchecked.
 */
async function openedPath(fd: number, shown: string): Promise<string | null> {
  const held = await readlinkOf(`/proc/self/fd/${fd}`).catch(() => {
    throw invalid(`Source ${shown} not allowed: this platform cannot check an open file's path (no /proc/self/fd)`);
  });
  return held.endsWith(DELETED) ? null : held;
}

const DELETED = ' (deleted)';

/**
 * The one rule for local sources: a real path (links resolved) is allowed when it is a root's
 * real path or lies below one.
 */
const insideRoots = (realRootList: readonly string[], real: string) =>
  realRootList.some((root) => isWithin(root, real));

/** The real path of a local source inside one of the roots, or the reason it is refused. */
async function containedRealPath(roots: readonly string[], raw: string) {
  const shown = shownSource(raw);
  if (/^[a-z][a-z0-9+.-]*:/i.test(shown) && !shown.startsWith('file:')) {
    throw invalid(`Source ${shown} not allowed: unsupported scheme`);
  }
  const local = raw.startsWith('file:') ? safeFileUrl(raw) : raw;
  if (!path.isAbsolute(local) || local.split(/[\\/]/).includes('..')) {
    throw invalid(`Source ${shown} not allowed: an absolute path without '..' expected`);
  }
  if (roots.length === 0) throw invalid(`Source ${shown} not allowed: no local source roots are configured`);
  // The roots too: one replaced by a link is judged by where it leads at this probe.
  const [real, realRootList] = await Promise.all([realpathOf(local).catch(() => null), realRoots(roots)]);
  if (realRootList.length === 0) throw invalid(`Source ${shown} not allowed: no local source roots are configured`);
  // A missing file is judged by where it would be, its existing part resolved: "not found" only
  // inside a root, so the answers never tell which files exist elsewhere.
  const judged = real ?? (await resolvedAsFarAsItExists(local));
  if (!insideRoots(realRootList, judged)) {
    throw invalid(`Source ${shown} not allowed: outside the configured source roots`);
  }
  if (real === null) throw invalid(`Source ${shown} not found`);
  return { real, shown, realRootList };
}

/** The real path of the deepest existing ancestor of `local`, with the missing rest appended. */
async function resolvedAsFarAsItExists(local: string): Promise<string> {
  const missing: string[] = [];
  for (let at = local; ; at = path.dirname(at)) {
    const real = await realpathOf(at).catch(() => null);
    if (real !== null) return path.join(real, ...missing.reverse());
    if (path.dirname(at) === at) return local;
    missing.push(path.basename(at));
  }
}

/** Whether `candidate` is `root` or lies below it (both absolute and normalised). */
export const isWithin = (root: string, candidate: string) =>
  candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep);

/** The real paths of the roots that exist now. */
async function realRoots(roots: readonly string[]): Promise<string[]> {
  const real = await Promise.all(roots.map((r) => realpathOf(r).catch(() => null)));
  return real.filter((r): r is string => r !== null);
}

// Node's callback API, promisified: through fs/promises the two calls cost more CPU (see BENCHMARKS.md).
const realpathOf = promisify(fs.realpath.native);
const readlinkOf = promisify(fs.readlink);

function safeFileUrl(source: string) {
  try {
    return fileURLToPath(source);
  } catch {
    throw invalid(`Source ${source} is not a valid file URL`);
  }
}

/**
 * Reads a data file's source when it is sent: a local file under the roots, checked and opened as
 * `openLocalSource` does, or an http(s) URL on an allowed host, streamed. The size is what the
 * source says now; the mover compares it, and the bytes read, with the registered size. A range
 * (the portal's downloads) reads only those bytes; one past the end reads none. An R2 object (put
 * by a Worker on a shared database) is refused with the reason, as at registration.
 */
export function nodeSourceReader(options: { roots: readonly string[]; hosts: readonly string[] }): SourceReader {
  const http = httpSourceReader(options.hosts);
  return {
    async open(raw, signal, range) {
      if (isRemoteSource(raw)) return http.open(raw, signal, range);
      if (isR2Source(raw)) throw r2SourceOnWorkersOnly(raw);
      const { size, file } = await openLocalSource(options.roots, raw);
      // A stream on the descriptor rather than the FileHandle's own: its promise-based reads
      // cost the mover about 0.3 s more of its main thread per GiB. The handle keeps the
      // descriptor and closes it once the stream is done, whichever way; the stream never does,
      // not even when destroyed (a stop, a send cut short): `autoClose: false` only spares the
      // end. Closed twice, the number could by then be another file's, or a spawn's pipe.
      const stream = fs.createReadStream('', {
        fd: file.fd,
        fs: { read: fs.read, close: (_fd: number, done: (error: null) => void) => done(null) },
        autoClose: false,
        // No larger than the bytes to read: each read fills a buffer of this size, small file or not.
        highWaterMark: Math.max(64 * 1024, Math.min(1024 * 1024, range ? range.end - range.start + 1 : size)),
        signal,
        ...(range && { start: range.start, end: range.end }),
      });
      finished(stream, () => void file.close().catch(() => undefined));
      return { size, stream };
    },
  };
}
