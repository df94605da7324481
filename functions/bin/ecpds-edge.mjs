#!/usr/bin/env node
// Runs the compiled build in dist/ (no TypeScript loader at run time, so start-up stays short).
// `npm ci` builds it through the `prepare` script; `npm run build` builds it again.
let cli;
try {
  cli = await import('../../dist/cli.js');
} catch (e) {
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !String(e.message).includes('dist')) throw e;
  process.stderr.write('ecpds-edge: the compiled build is missing; run `npm run build` (or `npm ci`) first\n');
  process.exit(1);
}
// `ecpds-edge --help | head`: a reader that stops early is not an error.
process.stdout.on('error', (e) => {
  if (e.code !== 'EPIPE') throw e;
  process.exit(process.exitCode ?? 0);
});
const io = {
  stdout: process.stdout,
  stderr: process.stderr,
  // Read only by the commands that take standard input; touching it earlier opens it for nothing.
  get stdin() {
    return process.stdin;
  },
  env: process.env,
};
process.exitCode = await cli.main(process.argv.slice(2), io);
