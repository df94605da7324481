#!/usr/bin/env node
// Compiles the Node entry (command line and server) into dist/, so that the bin runs plain
// JavaScript: no TypeScript loader to start, and our modules in a few files instead of hundreds.
// Packages stay external: PGlite finds its wasm and data files, and postgres.js its patched
// copy, in node_modules as they were installed.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { writeGuidePages } from './docs-bundle.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DIST = path.join(ROOT, 'dist');

export async function buildDist() {
  // The guides the server serves at /docs/guide, from docs/*.md (written only when they changed).
  writeGuidePages();
  fs.rmSync(DIST, { recursive: true, force: true });
  await build({
    absWorkingDir: ROOT,
    // The Node command line and server, and the fetch shell's entries for Bun and Deno (docs/deploy.md).
    entryPoints: { cli: 'functions/node/cli.ts', bun: 'functions/runtimes/bun.ts', deno: 'functions/runtimes/deno.ts' },
    outdir: DIST,
    bundle: true,
    // Separate chunks for what is imported lazily (the database, the server, the typed client),
    // so `--help` or a remote command does not load the database drivers.
    splitting: true,
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
  fs.writeFileSync(path.join(DIST, 'package.json'), '{ "type": "module" }\n');
}

/**
 * The AWS Lambda function (functions/runtimes/lambda.ts) in dist/lambda/, to zip as it is: packages
 * bundled, but for the embedded database, which a function does not use (it needs DATABASE_URL) and
 * whose chunk alone imports it.
 */
export async function buildLambda() {
  const outdir = path.join(DIST, 'lambda');
  fs.rmSync(outdir, { recursive: true, force: true });
  await build({
    absWorkingDir: ROOT,
    entryPoints: { index: 'functions/runtimes/lambda.ts' },
    outdir,
    bundle: true,
    splitting: true,
    chunkNames: '[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    external: ['@electric-sql/pglite'],
    platform: 'node',
    format: 'esm',
    target: 'node20',
    tsconfig: 'tsconfig.json',
    // Packages written as CommonJS call require, which an ES module has only when given one.
    banner: {
      js: "import { createRequire as createRequireOfBundle } from 'node:module';\nconst require = createRequireOfBundle(import.meta.url);",
    },
    logLevel: 'warning',
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  if (process.argv.includes('--lambda')) await buildLambda();
  else await buildDist();
}
