import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { portableHashing } from '../core/common/hashing.ts';
import { type Delivery, deliverFile, type RemoteFiles } from '../core/dissemination/deliver.ts';
import { attemptFence } from '../core/dissemination/methods.ts';
import { fileRemote } from '../functions/transfer-methods/file.ts';

const temp = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-deliver-'));
afterAll(() => fs.rmSync(temp, { recursive: true, force: true }));
let hosts = 0;
const hostDir = () => fs.mkdtempSync(path.join(temp, `host-${++hosts}-`));

async function* chunks(bytes: Uint8Array, size = 7_000, pause?: () => Promise<void>) {
  for (let at = 0; at < bytes.byteLength; at += size) {
    if (pause) await pause();
    yield bytes.subarray(at, at + size);
  }
}
const payload = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + 7) % 251);
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const delivery = (over: Partial<Delivery> = {}): Delivery => ({
  directory: 'incoming',
  target: 'products/a.grib',
  registeredSize: 100_000,
  temporary: { use: true, prefix: '', suffix: '.tmp' },
  makeDirectories: true,
  ignoreCheck: false,
  ...over,
});
/** Every file under a directory, relative to it. */
const filesIn = (dir: string) =>
  fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());

describe('delivering a file under a temporary name', () => {
  it('writes the bytes, renames them into place and answers their size and MD5', async () => {
    const root = hostDir();
    const bytes = payload(100_000);
    const done = await deliverFile(
      fileRemote(root),
      delivery(),
      chunks(bytes),
      new AbortController().signal,
      portableHashing,
    );
    expect(done).toEqual({ sent: 100_000, md5: md5(bytes) });
    expect(new Uint8Array(fs.readFileSync(path.join(root, 'incoming/products/a.grib')))).toEqual(bytes);
    expect(filesIn(root).map((e) => e.name)).toEqual(['a.grib']);
  });

  it('replaces an earlier delivery of the same target', async () => {
    const root = hostDir();
    fs.mkdirSync(path.join(root, 'incoming/products'), { recursive: true });
    fs.writeFileSync(path.join(root, 'incoming/products/a.grib'), 'old');
    const bytes = payload(100_000);
    await deliverFile(fileRemote(root), delivery(), chunks(bytes), new AbortController().signal, portableHashing);
    expect(fs.readFileSync(path.join(root, 'incoming/products/a.grib')).byteLength).toBe(100_000);
  });

  it('fails a source whose size changed since it was registered, leaving nothing behind', async () => {
    const root = hostDir();
    const attempt = deliverFile(
      fileRemote(root),
      delivery(),
      chunks(payload(99_000)),
      new AbortController().signal,
      portableHashing,
    );
    await expect(attempt).rejects.toThrow('Source changed size: 99000 bytes read, 100000 registered');
    expect(filesIn(root)).toEqual([]);
  });

  it('stops when aborted mid-stream, and leaves neither the final nor the temporary name', async () => {
    const root = hostDir();
    const abort = new AbortController();
    let sentChunks = 0;
    const source = chunks(payload(100_000), 5_000, async () => {
      if (++sentChunks === 5) abort.abort(new Error('deleted'));
    });
    await expect(deliverFile(fileRemote(root), delivery(), source, abort.signal, portableHashing)).rejects.toThrow(
      'deleted',
    );
    expect(filesIn(root)).toEqual([]);
  });

  it('writes under the final name at once when the temporary name is off, and honours prefix and suffix', async () => {
    const direct = hostDir();
    const bytes = payload(100_000);
    const off = delivery({ temporary: { use: false, prefix: '', suffix: '' }, makeDirectories: true });
    await deliverFile(fileRemote(direct), off, chunks(bytes), new AbortController().signal, portableHashing);
    expect(fs.existsSync(path.join(direct, 'incoming/products/a.grib'))).toBe(true);

    const seen: string[] = [];
    const root = hostDir();
    const remote = fileRemote(root);
    const spy = {
      ...remote,
      write: (p: string, s: AsyncIterable<Uint8Array>, sig: AbortSignal) => {
        seen.push(p);
        return remote.write(p, s, sig);
      },
    };
    const prefixed = delivery({ temporary: { use: true, prefix: '.', suffix: '.part' } });
    await deliverFile(spy, prefixed, chunks(bytes), new AbortController().signal, portableHashing);
    expect(seen).toEqual(['incoming/products/.a.grib.part']);
    expect(filesIn(root).map((e) => e.name)).toEqual(['a.grib']);
  });

  it('fails when the remote size differs from the bytes sent, unless told to ignore the check', async () => {
    const root = hostDir();
    const remote = fileRemote(root);
    const short = { ...remote, size: async () => 50_000 };
    const bytes = payload(100_000);
    const attempt = deliverFile(short, delivery(), chunks(bytes), new AbortController().signal, portableHashing);
    await expect(attempt).rejects.toThrow('Transfer aborted at 50%');
    expect(filesIn(root)).toEqual([]);
    await deliverFile(
      short,
      delivery({ ignoreCheck: true }),
      chunks(bytes),
      new AbortController().signal,
      portableHashing,
    );
    expect(filesIn(root).map((e) => e.name)).toEqual(['a.grib']);
  });

  it("writes the attempt's own temporary name, after removing what any earlier attempt of the transfer left", async () => {
    const root = hostDir();
    const products = path.join(root, 'incoming/products');
    fs.mkdirSync(products, { recursive: true });
    // Attempt 1 was cut off mid-write, attempt 2 before it reached the host; another transfer's is not ours.
    for (const name of ['a.grib.7-1.tmp', 'a.grib.8-1.tmp']) fs.writeFileSync(path.join(products, name), 'cut off');
    const names: string[] = [];
    const remote = fileRemote(root);
    const watching: RemoteFiles = {
      ...remote,
      write(file, source, signal) {
        names.push(path.basename(file));
        return remote.write(file, source, signal);
      },
    };
    const fence = attemptFence(7, 3, async () => undefined);
    const bytes = payload(100_000);
    await deliverFile(watching, delivery({ fence }), chunks(bytes), new AbortController().signal, portableHashing);
    expect(names).toEqual(['a.grib.7-3.tmp']);
    expect(fs.readdirSync(products).sort()).toEqual(['a.grib', 'a.grib.8-1.tmp']);
  });

  it('refuses a target that would leave the host directory', async () => {
    const root = hostDir();
    const leaving = delivery({ directory: '', target: '../outside.grib' });
    await expect(
      deliverFile(fileRemote(root), leaving, chunks(payload(100_000)), new AbortController().signal, portableHashing),
    ).rejects.toThrow('leaves the host directory');
    expect(fs.existsSync(path.join(root, '..', 'outside.grib'))).toBe(false);
  });
});
