import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { type ListedObject, type ObjectStore, StoredObjectMissing } from '../../core/store/ports.ts';
import { untilAborted } from '../transfer-methods/s3.ts';

const PARTIAL = '.partial-';

/**
 * The store in a local directory, for one machine: each object a file, written under a temporary
 * name beside its final one and renamed into place once whole and flushed, so that a crash never
 * leaves a partial file under an object's key.
 */
export function directoryStore(root: string): ObjectStore {
  const fileOf = (key: string) => {
    const file = path.resolve(root, key);
    if (!file.startsWith(`${path.resolve(root)}${path.sep}`)) throw new Error(`Invalid object key ${key}`);
    return file;
  };
  return {
    description: `directory ${root}`,
    async write(key, bytes, signal, size) {
      const file = fileOf(key);
      await fs.mkdir(path.dirname(file), { recursive: true });
      const partial = `${path.dirname(file)}/${PARTIAL}${path.basename(file)}-${randomUUID()}`;
      try {
        await writeFlushed(partial, bytes, signal, size);
        await fs.rename(partial, file);
      } catch (error) {
        await fs.rm(partial, { force: true });
        throw error;
      }
    },
    async read(key, signal, range) {
      const file = fileOf(key);
      let handle: fs.FileHandle;
      try {
        handle = await fs.open(file, 'r');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new StoredObjectMissing(key);
        throw error;
      }
      try {
        const { size } = await handle.stat();
        const stream = createReadStream('', {
          fd: handle,
          signal,
          highWaterMark: 1 << 20,
          ...(range ? { start: range.start, end: range.end } : {}),
        });
        return { size, stream };
      } catch (error) {
        await handle.close();
        throw error;
      }
    },
    async remove(keys) {
      await Promise.all(keys.map((key) => fs.rm(fileOf(key), { force: true })));
    },
    async *list(): AsyncIterable<ListedObject> {
      yield* walk(path.resolve(root), '');
    },
  };
}

// Flushed as it is written: the disk writes the start of a large object while the rest is still read and
// summed, instead of all of it after the last byte.
const FLUSH_EVERY_BYTES = 32 * 1024 * 1024;

/**
 * Writes the bytes to a new file and returns once they are all on disk. Each chunk is written while the
 * next is asked for (and this one summed, see `summing`); once `size` bytes are in, the file is synced at
 * once, still while the last chunk is summed, and again at the end only if more came.
 */
async function writeFlushed(file: string, bytes: AsyncIterable<Uint8Array>, signal: AbortSignal, size?: number) {
  const handle = await fs.open(file, 'wx');
  let flushing: Promise<void> | null = null;
  let writing: Promise<void> | null = null;
  let syncedAt = -1;
  try {
    let written = 0;
    let unflushed = 0;
    // Ends at once on abort, even while a stalled source is awaited.
    for await (const chunk of untilAborted(bytes, signal)) {
      await writing;
      written += chunk.byteLength;
      unflushed += chunk.byteLength;
      const whole = written === size;
      if (whole) syncedAt = written;
      writing = writeAll(handle, chunk).then(() => (whole ? handle.sync() : undefined));
      // Awaited with the next chunk, or at the end: a failure meanwhile is not an unhandled rejection.
      writing.catch(() => undefined);
      if (unflushed >= FLUSH_EVERY_BYTES && !flushing && !whole) {
        unflushed = 0;
        flushing = writing
          .then(() => handle.datasync())
          .finally(() => {
            flushing = null;
          });
        flushing.catch(() => undefined);
      }
    }
    await writing;
    await flushing;
    if (syncedAt !== written) await handle.sync();
  } finally {
    await Promise.allSettled([writing, flushing]);
    await handle.close();
  }
}

async function writeAll(handle: fs.FileHandle, chunk: Uint8Array) {
  for (let at = 0; at < chunk.byteLength; ) {
    at += (await handle.write(chunk, at, chunk.byteLength - at)).bytesWritten;
  }
}

async function* walk(directory: string, prefix: string): AsyncIterable<ListedObject> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await fs.readdir(directory, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  for (const entry of entries) {
    const full = path.join(directory, entry.name);
    const key = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) yield* walk(full, key);
    // A partial file is a write under way, not an object: a sweep must not take it for one.
    else if (entry.isFile() && !entry.name.startsWith(PARTIAL)) {
      const stat = await fs.stat(full).catch(() => null);
      if (stat) yield { key, size: stat.size, modifiedAt: stat.mtime };
    }
  }
}
