import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { httpSourceReader } from '../core/data-files/sources.ts';
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

  it('refuses an R2 object, put by a Worker on a shared database, with the reason', async () => {
    const reader = nodeSourceReader({ roots: [root], hosts: [] });
    const signal = new AbortController().signal;
    for (const range of [undefined, { start: 0, end: 9 }]) {
      await expect(reader.open('r2://ECPDS_SOURCES/fc/a.grib', signal, range)).rejects.toThrow(
        'Source r2://ECPDS_SOURCES/fc/a.grib not allowed: R2 sources are read by Workers only',
      );
    }
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

const collect = async (stream: AsyncIterable<Uint8Array>) => {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
};

describe("reading a range of a source (the portal's downloads)", () => {
  const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));

  it("reads the bytes of the range of a local file; its size is still the whole file's", async () => {
    const file = path.join(root, 'ranged.bin');
    fs.writeFileSync(file, bytes);
    const reader = nodeSourceReader({ roots: [root], hosts: [] });
    const opened = await reader.open(file, new AbortController().signal, { start: 1000, end: 270_000 });
    expect(opened.size).toBe(bytes.length);
    expect((await collect(opened.stream)).equals(bytes.subarray(1000, 270_001))).toBe(true);
  });

  it('asks an http source for the range, and cuts the whole answer of one that ignores it', async () => {
    const server = http.createServer((req, res) => {
      const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
      if (req.url === '/ranged' && range) {
        const [start, end] = [Number(range[1]), Number(range[2])];
        if (start >= bytes.length) return void res.writeHead(416, { 'content-range': `bytes */${bytes.length}` }).end();
        const part = bytes.subarray(start, end + 1);
        res.writeHead(206, {
          'content-range': `bytes ${start}-${start + part.length - 1}/${bytes.length}`,
          'content-length': part.length,
        });
        return void res.end(part);
      }
      res.writeHead(200, { 'content-length': bytes.length }).end(bytes);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const reader = httpSourceReader([host]);
      const signal = new AbortController().signal;
      for (const name of ['ranged', 'whole']) {
        const opened = await reader.open(`http://${host}/${name}`, signal, { start: 70_000, end: 200_000 });
        expect(opened.size, name).toBe(bytes.length);
        expect((await collect(opened.stream)).equals(bytes.subarray(70_000, 200_001)), name).toBe(true);
      }
      const past = await reader.open(`http://${host}/ranged`, signal, { start: bytes.length, end: bytes.length + 9 });
      expect(past.size).toBe(bytes.length);
      expect((await collect(past.stream)).length).toBe(0);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
