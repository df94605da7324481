import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openLocalSource } from '../functions/node/sources.ts';

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
});
