import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { invalid } from '../../core/common/errors.ts';
import type { SourceProber } from '../../core/data-files/ports.ts';
import { httpSourceProber, isRemoteSource, shownSource } from '../../core/data-files/sources.ts';

/**
 * Local sources must resolve (symlinks followed) to a regular file inside one of the roots;
 * `..` segments are refused outright. http(s) sources go to the allow-listed prober.
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
      const source = shownSource(raw);
      if (/^[a-z][a-z0-9+.-]*:/i.test(source) && !source.startsWith('file:')) {
        throw invalid(`Source ${source} not allowed: unsupported scheme`);
      }
      const local = raw.startsWith('file:') ? safeFileUrl(raw) : raw;
      if (!path.isAbsolute(local) || local.split(/[\\/]/).includes('..')) {
        throw invalid(`Source ${source} not allowed: an absolute path without '..' expected`);
      }
      if (options.roots.length === 0)
        throw invalid(`Source ${source} not allowed: no local source roots are configured`);
      // The roots too: one replaced by a link is judged by where it leads at this probe.
      const [real, roots] = await Promise.all([realpathOf(local).catch(() => null), realRoots(options.roots)]);
      if (roots.length === 0) throw invalid(`Source ${source} not allowed: no local source roots are configured`);
      if (real === null) throw invalid(`Source ${source} not found`);
      if (!roots.some((root) => real === root || real.startsWith(root.endsWith(path.sep) ? root : root + path.sep))) {
        throw invalid(`Source ${source} not allowed: outside the configured source roots`);
      }
      // The resolved path, not the given one: what is measured is what was checked.
      const stat = await statOf(real).catch(() => {
        throw invalid(`Source ${source} not found`);
      });
      if (!stat.isFile()) throw invalid(`Source ${source} not allowed: not a regular file`);
      return { size: stat.size };
    },
  };
}

/** The real paths of the roots that exist now. */
async function realRoots(roots: readonly string[]): Promise<string[]> {
  const real = await Promise.all(roots.map((r) => realpathOf(r).catch(() => null)));
  return real.filter((r): r is string => r !== null);
}

// Node's callback API, promisified: through fs/promises the two calls cost more CPU (see BENCHMARKS.md).
const realpathOf = promisify(fs.realpath.native);
const statOf = promisify(fs.stat);

function safeFileUrl(source: string) {
  try {
    return fileURLToPath(source);
  } catch {
    throw invalid(`Source ${source} is not a valid file URL`);
  }
}
