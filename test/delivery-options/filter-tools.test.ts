import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeFilters } from '../../functions/transfer-methods/filters.ts';
import { eventually } from '../support/engine.ts';
import { needs } from '../support/tools.ts';

/**
 * The Node mover's compressors, each checked by its format's own tool: what they produce
 * decompresses to the source; a source that fails fails the output; a consumer that stops
 * reading ends the tool; a tool missing from the PATH leaves its filter unoffered.
 */

const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');
async function collect(stream: AsyncIterable<Uint8Array>) {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}
async function* chunksOf(bytes: Buffer, size: number, failAfter = Number.POSITIVE_INFINITY) {
  for (let at = 0; at < bytes.length; at += size) {
    if (at >= failAfter) throw new Error('source went away');
    yield bytes.subarray(at, at + size);
  }
}

const DECOMPRESS: Record<string, [string, string[]]> = {
  gzip: ['gzip', ['-d', '-c']],
  zstd: ['zstd', ['-d', '-c', '-q']],
  bzip2a: ['bzip2', ['-d', '-c']],
  lbzip2: ['bzip2', ['-d', '-c']],
  lzma: ['xz', ['--format=lzma', '-d', '-c']],
};

describe('the Node filters', needs('zstd', 'bzip2', 'xz', 'ps'), () => {
  const filters = nodeFilters();
  const source = Buffer.concat([randomBytes(300_000), Buffer.alloc(700_000, 'forecast ')]);

  it('offers gzip, zstd, bzip2a, lbzip2 and lzma, each decompressing to the source with its own tool', async () => {
    expect(Object.keys(filters).sort()).toEqual(['bzip2a', 'gzip', 'lbzip2', 'lzma', 'zstd']);
    for (const [name, [command, args]] of Object.entries(DECOMPRESS)) {
      const compressed = await collect(filters[name]!(chunksOf(source, 64 * 1024)));
      expect(compressed.length, name).toBeLessThan(source.length);
      expect(md5(execFileSync(command, args, { input: compressed, maxBuffer: 8 * 1024 * 1024 })), name).toBe(
        md5(source),
      );
    }
  });

  it('fails the output when the source fails, whatever the tool made of the bytes before', async () => {
    for (const name of ['zstd', 'bzip2a', 'lzma', 'gzip']) {
      await expect(collect(filters[name]!(chunksOf(source, 64 * 1024, 200_000))), name).rejects.toThrow(
        'source went away',
      );
    }
  });

  it('ends the tool when its reader stops early', async () => {
    const before = toolProcesses();
    for (let i = 0; i < 3; i++) {
      const output = filters.zstd!(chunksOf(Buffer.concat([source, source, source]), 16 * 1024));
      for await (const _ of output) break;
    }
    // Each tool ends once its reader has stopped; a busy machine may take a while to reap them.
    await eventually(async () => (toolProcesses() === before ? true : undefined), 10_000, 'the zstd processes to end');
    expect(toolProcesses()).toBe(before);
  });

  it('offers only gzip when no tool is on the PATH, and what a directory of the PATH holds otherwise', () => {
    expect(Object.keys(nodeFilters(''))).toEqual(['gzip']);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-path-'));
    try {
      fs.symlinkSync('/usr/bin/zstd', path.join(dir, 'zstd'));
      expect(Object.keys(nodeFilters(dir)).sort()).toEqual(['gzip', 'zstd']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** zstd processes that are children of this test process. */
function toolProcesses() {
  const out = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  return out.split('\n').filter((line) => /\bzstd$/.test(line.trim())).length;
}
