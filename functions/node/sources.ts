import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { invalid } from '../../core/errors.ts';
import type { SourceProber } from '../../core/ports.ts';
import { httpSourceProber, isRemoteSource, shownSource } from '../../core/sources.ts';

/**
 * Local sources must resolve (symlinks followed) to a regular file inside one of the roots;
 * `..` segments are refused outright. http(s) sources go to the allow-listed prober.
 */
export function nodeSourceProber(options: { roots: readonly string[]; hosts: readonly string[]; timeoutMs: number }): SourceProber {
  const http = httpSourceProber(options.hosts, options.timeoutMs);
  const roots = Promise.all(options.roots.map((r) => realpathOf(r).catch(() => null)));
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
      const allowed = (await roots).filter((r): r is string => r !== null);
      if (allowed.length === 0) throw invalid(`Source ${source} not allowed: no local source roots are configured`);
      // Both at once (each waits for a worker thread); stat follows the same links realpath resolves.
      const [real, stat] = await Promise.all([realpathOf(local), statOf(local)]).catch(() => {
        throw invalid(`Source ${source} not found`);
      });
      if (!allowed.some((root) => real === root || real.startsWith(root.endsWith(path.sep) ? root : root + path.sep))) {
        throw invalid(`Source ${source} not allowed: outside the configured source roots`);
      }
      if (!stat.isFile()) throw invalid(`Source ${source} not allowed: not a regular file`);
      return { size: stat.size };
    },
  };
}

// Node's callback API, promisified: through fs/promises the two calls cost more CPU (about 42–61
// against 34 µs for both, measured in a loop, ten at a time).
const realpathOf = promisify(fs.realpath.native);
const statOf = promisify(fs.stat);

function safeFileUrl(source: string) {
  try {
    return fileURLToPath(source);
  } catch {
    throw invalid(`Source ${source} is not a valid file URL`);
  }
}
