import { Readable, Writable } from 'node:stream';
import { main } from '../../functions/node/cli.ts';

/** `ecpds-edge <args>` run by main() in the test's own process, with its output captured. */
export interface CliRun {
  status: number;
  stdout: string;
  stderr: string;
}

function capture() {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

/**
 * Only `env` is the command's environment (not the test process's), so a DATABASE_URL of the
 * test run cannot leak into it; relative paths resolve against `cwd`.
 */
export async function runMain(
  args: string[],
  options: { env: Record<string, string | undefined>; cwd?: string; input?: string },
): Promise<CliRun> {
  const stdout = capture();
  const stderr = capture();
  const status = await main(args, {
    stdout: stdout.stream,
    stderr: stderr.stream,
    stdin: Readable.from(options.input === undefined ? [] : [options.input]),
    env: { ECPDS_DEMO: '0', ECPDS_PORTAL_SFTP_PORT: '0', ECPDS_PORTAL_S3_PORT: '0', ...options.env },
    cwd: options.cwd,
  });
  return { status, stdout: stdout.text(), stderr: stderr.text() };
}
