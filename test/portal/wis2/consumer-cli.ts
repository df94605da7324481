import { Writable } from 'node:stream';
import type { Ports } from '../../../core/ports.ts';
import { addAdminCommands } from '../../../functions/node/cli-admin.ts';
import { CommandContext } from '../../../functions/node/cli-io.ts';
import { rootCommand, runProgram } from '../../../functions/node/cli-program.ts';
import type { Runtime } from '../../../functions/node/runtime.ts';

/**
 * `ecpds-edge <argv>` on a harness's own database, whichever it is (an embedded one can't be opened
 * twice): the command line's commands, run as a server runs one handed to it, on its ports.
 */
export async function cliOn(ports: Ports, ...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const sink = (write: (text: string) => void) =>
    new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        write(String(chunk));
        done();
      },
    });
  const io = { stdout: sink((t) => (stdout += t)), stderr: sink((t) => (stderr += t)), env: {} };
  const ctx = new CommandContext(io, argv, { ports } as unknown as Runtime);
  const status = await runProgram(ctx, argv, () => {
    const root = rootCommand(io);
    addAdminCommands(root, ctx);
    return root;
  });
  return { status, stdout, stderr };
}
