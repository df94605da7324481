import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type ListedObject, type ObjectStore, StoredObjectMissing } from '../../core/store/ports.ts';

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
    async write(key, bytes, signal) {
      const file = fileOf(key);
      await fs.mkdir(path.dirname(file), { recursive: true });
      const partial = `${path.dirname(file)}/${PARTIAL}${path.basename(file)}-${randomUUID()}`;
      try {
        const out = createWriteStream(partial, { flags: 'wx' });
        await pipeline(bytes, out, { signal });
        const handle = await fs.open(partial, 'r');
        try {
          await handle.sync();
        } finally {
          await handle.close();
        }
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
