#!/usr/bin/env node
// The command line runs the TypeScript sources directly through tsx's loader.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../node/cli.ts');
process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  get stdin() {
    return process.stdin;
  },
  env: process.env,
});
