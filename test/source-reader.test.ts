import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nodeSourceReader, openLocalSource } from '../functions/node/sources.ts';

const temp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-source-reader-')));
const root = path.join(temp, 'root');
const outside = path.join(temp, 'outside');
fs.mkdirSync(path.join(root, 'sub'), { recursive: true });
fs.mkdirSync(outside);
fs.writeFileSync(path.join(root, 'sub/a.grib'), 'inside bytes');
fs.writeFileSync(path.join(outside, 'secret.txt'), 'outside bytes');
fs.symlinkSync(path.join(root, 'sub/a.grib'), path.join(root, 'link-in.grib'));
fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'link-out.grib'));
afterAll(() => fs.rmSync(temp, { recursive: true, force: true }));

async function readAll(raw: string) {
  const { size, file } = await openLocalSource([root], raw);
  try {
    return { size, text: (await file.readFile()).toString() };
  } finally {
    await file.close();
  }
}

describe('opening a local source to send it', () => {
  it('reads a file inside the roots, also through a link that stays inside', async () => {
    expect(await readAll(path.join(root, 'sub/a.grib'))).toEqual({ size: 12, text: 'inside bytes' });
    expect(await readAll(`file://${path.join(root, 'link-in.grib')}`)).toEqual({ size: 12, text: 'inside bytes' });
  });

  it('refuses what registration refuses: links leaving the roots, directories, missing or relative paths', async () => {
    await expect(readAll(path.join(root, 'link-out.grib'))).rejects.toThrow('outside the configured source roots');
    await expect(readAll(path.join(root, 'sub'))).rejects.toThrow('not a regular file');
    await expect(readAll(path.join(root, 'gone.grib'))).rejects.toThrow('not found');
    await expect(readAll('sub/a.grib')).rejects.toThrow("an absolute path without '..' expected");
    await expect(readAll(`${root}/sub/../sub/a.grib`)).rejects.toThrow("an absolute path without '..' expected");
  });

  it('judges a file swapped for a link since registration by where it leads now', async () => {
    const swapped = path.join(root, 'swapped.grib');
    fs.writeFileSync(swapped, 'was fine');
    expect((await readAll(swapped)).text).toBe('was fine');
    fs.rmSync(swapped);
    fs.symlinkSync(path.join(outside, 'secret.txt'), swapped);
    await expect(readAll(swapped)).rejects.toThrow('outside the configured source roots');
  });

  it('streams the file to send in chunks, and closes it once read in full or abandoned', async () => {
    const big = path.join(root, 'big.bin');
    const bytes = Buffer.alloc(1_000_003, 7);
    fs.writeFileSync(big, bytes);
    const reader = nodeSourceReader({ roots: [root], hosts: [] });
    const closed = async (stream: AsyncIterable<Uint8Array>) => {
      const fd = (stream as unknown as { fd: number }).fd;
      await new Promise((resolve) => setTimeout(resolve, 50));
      return (() => {
        try {
          fs.fstatSync(fd);
          return false;
        } catch {
          return true;
        }
      })();
    };
    const whole = await reader.open(big, new AbortController().signal);
    const read: Uint8Array[] = [];
    for await (const chunk of whole.stream) read.push(chunk);
    expect(whole.size).toBe(bytes.byteLength);
    expect(Buffer.concat(read).equals(bytes)).toBe(true);
    expect(await closed(whole.stream)).toBe(true);

    const partial = await reader.open(big, new AbortController().signal);
    for await (const _ of partial.stream) break;
    expect(await closed(partial.stream)).toBe(true);
  });
});
