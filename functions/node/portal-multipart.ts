import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DEFAULT_MULTIPART_LIMITS, type MultipartLimits } from '../../core/portal/multipart-limits.ts';
import type { MultipartStore, MultipartUpload, StoredPart } from '../portal/upload.ts';

const UPLOAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DESCRIPTION = 'upload.json';

/**
 * Multipart uploads on this machine: `<dir>/<upload id>/` holds the upload's description and its
 * parts (`<n>.part`, with `<n>.json` saying its size and MD5), each written under a temporary name
 * and renamed whole. `dir` is inside the upload store's temporary directory. An upload left
 * longer than `limits.staleAfterMs` since its last part is aborted, its parts removed: all of them
 * when the next upload is created, one asked for by its id, and all of them by the periodic sweep
 * (removeStale), whose user may never come back.
 */
export function nodeMultipartStore(dir: string, limits: MultipartLimits = DEFAULT_MULTIPART_LIMITS): MultipartStore {
  const staleBefore = () => Date.now() - limits.staleAfterMs;
  const folder = (uploadId: string) => {
    // The id comes from the client: only one of ours names a folder.
    if (!UPLOAD_ID.test(uploadId)) return null;
    return path.join(dir, uploadId);
  };
  const partFile = (uploadId: string, n: number) => path.join(dir, uploadId, `${n}.part`);
  return {
    limits,
    async create(upload) {
      await removeAbandoned(dir, staleBefore());
      const id = randomUUID();
      await fs.promises.mkdir(path.join(dir, id), { recursive: true });
      await fs.promises.writeFile(path.join(dir, id, DESCRIPTION), JSON.stringify(upload), { flag: 'wx' });
      return id;
    },
    async get(uploadId) {
      const at = folder(uploadId);
      if (at === null) return null;
      const stat = await fs.promises.stat(at).catch(() => null);
      if (stat === null) return null;
      if (stat.mtimeMs < staleBefore()) {
        await fs.promises.rm(at, { recursive: true, force: true });
        return null;
      }
      const text = await fs.promises.readFile(path.join(at, DESCRIPTION), 'utf8').catch(() => null);
      return text === null ? null : (JSON.parse(text) as MultipartUpload);
    },
    async openUploads(userId) {
      await removeAbandoned(dir, staleBefore());
      let open = 0;
      for (const name of (await fs.promises.readdir(dir).catch(() => [] as string[])).filter((n) =>
        UPLOAD_ID.test(n),
      )) {
        const text = await fs.promises.readFile(path.join(dir, name, DESCRIPTION), 'utf8').catch(() => null);
        if (text !== null && (JSON.parse(text) as MultipartUpload).userId === userId) open++;
      }
      return open;
    },
    async receivePart(uploadId, partNumber, body) {
      const at = folder(uploadId);
      if (at === null) throw new Error('no such upload');
      const temporary = path.join(at, `${partNumber}.${randomUUID()}.tmp`);
      const md5 = createHash('md5');
      let bytes = 0;
      const hashing = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          md5.update(chunk);
          bytes += chunk.length;
          done(null, chunk);
        },
      });
      try {
        await pipeline(
          Readable.from(body, { objectMode: false }),
          hashing,
          fs.createWriteStream(temporary, { flags: 'wx' }),
        );
        const part: StoredPart = { partNumber, bytes, md5: md5.digest('hex') };
        await fs.promises.writeFile(path.join(at, `${partNumber}.json`), JSON.stringify(part));
        await fs.promises.rename(temporary, partFile(uploadId, partNumber));
        return part;
      } catch (e) {
        await fs.promises.rm(temporary, { force: true });
        throw e;
      }
    },
    async parts(uploadId) {
      const at = folder(uploadId);
      if (at === null) return [];
      const names = await fs.promises.readdir(at).catch(() => [] as string[]);
      const parts: StoredPart[] = [];
      for (const name of names) {
        const n = /^(\d+)\.part$/.exec(name)?.[1];
        if (n === undefined) continue;
        const text = await fs.promises.readFile(path.join(at, `${n}.json`), 'utf8').catch(() => null);
        if (text !== null) parts.push(JSON.parse(text) as StoredPart);
      }
      return parts.sort((a, b) => a.partNumber - b.partNumber);
    },
    async *read(uploadId, partNumbers) {
      if (folder(uploadId) === null) return;
      for (const n of partNumbers) yield* fs.createReadStream(partFile(uploadId, n), { highWaterMark: 1024 * 1024 });
    },
    removeStale: () => removeAbandoned(dir, staleBefore()),
    async remove(uploadId) {
      const at = folder(uploadId);
      if (at !== null) await fs.promises.rm(at, { recursive: true, force: true });
    },
  };
}

async function removeAbandoned(dir: string, before: number) {
  const names = await fs.promises.readdir(dir).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names.filter((n) => UPLOAD_ID.test(n))) {
    const at = path.join(dir, name);
    // The folder's time moves with each part written into it.
    const stat = await fs.promises.stat(at).catch(() => null);
    if (stat !== null && stat.mtimeMs < before) {
      await fs.promises.rm(at, { recursive: true, force: true });
      removed++;
    }
  }
  return removed;
}
