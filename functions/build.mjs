#!/usr/bin/env node
// Compiles the Node entry (command line and server) into dist/, so that the bin runs plain
// JavaScript: no TypeScript loader to start, and our modules in a few files instead of hundreds.
// Packages stay external: PGlite finds its wasm and data files, and postgres.js its patched
// copy, in node_modules as they were installed.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DIST = path.join(ROOT, 'dist');

export async function buildDist() {
  fs.rmSync(DIST, { recursive: true, force: true });
  await build({
    absWorkingDir: ROOT,
    entryPoints: { cli: 'functions/node/cli.ts' },
    outdir: DIST,
    bundle: true,
    // Separate chunks for what is imported lazily (the database, the server, the typed client),
    // so `--help` or a remote command does not load the database drivers.
    splitting: true,
    // Chunks beside the entry: db/migrate.ts finds its migrations next to its own module.
    chunkNames: '[name]-[hash]',
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    tsconfig: 'tsconfig.json',
    // For `node --enable-source-maps` when a stack trace needs reading; not loaded otherwise.
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  fs.cpSync(path.join(ROOT, 'db/migrations'), path.join(DIST, 'migrations'), { recursive: true });
  fs.writeFileSync(path.join(DIST, 'package.json'), '{ "type": "module" }\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await buildDist();
