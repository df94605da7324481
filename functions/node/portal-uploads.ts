import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { MultipartLimits } from '../../core/portal/multipart-limits.ts';
import type { Logger } from '../../core/ports.ts';
import { inTheWay, PARTIAL_DIRECTORY, type UploadMover, type UploadStore } from '../portal/upload.ts';
import { nodeMultipartStore } from './portal-multipart.ts';
import { isWithin } from './sources.ts';

/**
 * The sweep's part of the S3 multipart uploads: every user's uploads left stale (ECPDS_PORTAL_S3_UPLOAD_HOURS)
 * are aborted and their parts removed, also those of a user who never comes back to create or ask for one.
 */
export async function removeStaleMultipart(store: UploadStore, logger: Logger) {
  try {
    const aborted = (await store.multipart?.removeStale()) ?? 0;
    if (aborted > 0) logger.info('stale multipart uploads aborted', { uploads: aborted });
    return aborted;
  } catch (e) {
    logger.error('stale multipart uploads could not be removed', {
      reason: e instanceof Error ? e.message : String(e),
    });
    return 0;
  }
}

/**
 * The portal's uploads on this machine, in `dir` (ECPDS_PORTAL_UPLOAD_DIR, one of the source roots):
 * each body is written to `<dir>/.partial/<random>`, then renamed to `<dir>/<destination>/<path>`,
 * on the same file system, so the final name only ever holds a whole file. A download reading the
 * file it replaces keeps reading the old one.
 */
export function nodeUploadStore(dir: string, limits?: MultipartLimits): UploadStore & UploadMover {
  const root = path.resolve(dir);
  const partial = path.join(root, PARTIAL_DIRECTORY);
  return {
    multipart: nodeMultipartStore(path.join(partial, 'multipart'), limits),
    async receive(body) {
      await fs.promises.mkdir(partial, { recursive: true });
      const temporary = path.join(partial, `${randomUUID()}.part`);
      const out = fs.createWriteStream(temporary, { flags: 'wx' });
      try {
        await pipeline(Readable.from(body, { objectMode: false }), out);
      } catch (e) {
        // A body refused before its file was open: the open still creates the file, after an rm now would run.
        if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
        await fs.promises.rm(temporary, { force: true });
        throw e;
      }
      return {
        bytes: out.bytesWritten,
        async place(destination, target) {
          const final = path.resolve(root, destination, ...target.split('/'));
          // The tree's paths are checked before; this is the last word on where a file may go.
          if (!isWithin(root, final) || isWithin(partial, final)) throw inTheWay(target);
          try {
            await fs.promises.mkdir(path.dirname(final), { recursive: true });
            await fs.promises.rename(temporary, final);
          } catch (e) {
            const code = (e as NodeJS.ErrnoException).code;
            if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') throw inTheWay(target);
            throw e;
          }
          return final;
        },
        discard: () => fs.promises.rm(temporary, { force: true }),
      };
    },
    async move(source, destination, target) {
      const from = path.resolve(source);
      const final = path.resolve(root, destination, ...target.split('/'));
      if (!isWithin(root, from) || isWithin(partial, from) || from === root) return null;
      if (!isWithin(root, final) || isWithin(partial, final)) throw inTheWay(target);
      try {
        await fs.promises.mkdir(path.dirname(final), { recursive: true });
        // As an upload's place: what the new name held is replaced (a download of it keeps its bytes).
        await fs.promises.rename(from, final);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return null;
        if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') throw inTheWay(target);
        throw e;
      }
      return final;
    },
  };
}
