import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream';
import { pipeline as pipelineAsync } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { FilterCodecs } from '../../core/dissemination/filters.ts';

/**
 * The filters a Node mover applies, each streaming. gzip is Node's zlib. Node 20 has no zstd,
 * bzip2 or lzma, and no npm library of them is both streaming and well kept, so those run the
 * formats' own command-line tools (Debian's zstd, bzip2 and xz-utils), fed through a pipe: the
 * filters this process finds on its PATH at start. A host naming another one fails its attempts
 * with "Filter … not supported". zip, lz4 and snappy, whose framing in the reference is its own
 * library's, are not offered.
 */
export function nodeFilters(searchPath = process.env.PATH ?? ''): FilterCodecs {
  const codecs: Record<string, FilterCodecs[string]> = { gzip };
  for (const [name, [command, ...args]] of Object.entries(TOOLS)) {
    if (onPath(command!, searchPath)) codecs[name] = (source) => throughTool(name, command!, args, source);
  }
  return codecs;
}

/** The tool and arguments that compress stdin to stdout, by the reference's filter names. */
const TOOLS: Record<string, string[]> = {
  zstd: ['zstd', '-q', '-c'],
  bzip2a: ['bzip2', '-c'],
  lbzip2: ['bzip2', '-c'],
  lzma: ['xz', '--format=lzma', '-c'],
};

function gzip(source: AsyncIterable<Uint8Array>) {
  // The pipeline passes a failing source on as the compressor's error, and a consumer that stops
  // reading closes the source.
  const compressor = createGzip();
  pipeline(source, compressor, () => undefined);
  return compressor;
}

const onPath = (command: string, searchPath: string) =>
  searchPath
    .split(path.delimiter)
    .filter(Boolean)
    .some((dir) => {
      try {
        fs.accessSync(path.join(dir, command), fs.constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });

/**
 * The source through `command`'s stdin, its stdout as the result. A source that fails fails the
 * result (after what the tool made of the bytes before); so does a tool that exits with an error.
 * A consumer that stops reading ends the tool.
 */
async function* throughTool(name: string, command: string, args: string[], source: AsyncIterable<Uint8Array>) {
  const tool = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let errorOutput = '';
  tool.stderr.on('data', (data: Buffer) => {
    errorOutput = (errorOutput + data.toString()).slice(-500);
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    tool.once('error', reject);
    tool.once('close', resolve);
  });
  exited.catch(() => undefined);
  const fed = pipelineAsync(source, tool.stdin).then(
    () => null,
    (error: unknown) => error,
  );
  try {
    yield* tool.stdout as AsyncIterable<Uint8Array>;
    const failure = await fed;
    if (failure) throw failure;
    const code = await exited;
    if (code !== 0) throw new Error(`Filter ${name} failed: ${errorOutput.trim() || `exit code ${code}`}`);
  } finally {
    if (tool.exitCode === null) tool.kill();
  }
}
