import { Command, CommanderError } from 'commander';
import { isServiceError } from '../../core/common/errors.ts';
import type { CliIo, CommandContext } from './cli-io.ts';
import { ConfigError } from './config.ts';

/**
 * What every run of a command line shares, the bin's (cli.ts) and the one a running server makes
 * of a command handed to it (command-server.ts): the same error lines and the same exit codes.
 */

/** A root command whose errors are `ecpds-edge: ...` lines on the run's own streams. */
export function rootCommand(io: CliIo): Command {
  return (
    new Command('ecpds-edge')
      // Exit codes are returned, never process.exit: main also runs inside a test's process.
      .exitOverride()
      .configureOutput({
        writeOut: (text) => io.stdout.write(text),
        writeErr: (text) => io.stderr.write(text),
        outputError: (text, write) => write(`ecpds-edge: ${text.replace(/^error: /, '')}`),
        getOutHelpWidth: () => (io.stdout as { columns?: number }).columns ?? 100,
        getErrHelpWidth: () => (io.stderr as { columns?: number }).columns ?? 100,
      })
  );
}

/** A message for what an operator can fix; a stack trace for what is a bug. */
function describe(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const known = e instanceof ConfigError || isServiceError(e) || (e.name === 'TypeError' && 'code' in e);
  return known ? e.message : (e.stack ?? e.message);
}

/** Parses and runs `argv` on the program `build` makes, and answers the exit code. */
export async function runProgram(
  ctx: CommandContext,
  argv: string[],
  build: () => Command | Promise<Command>,
): Promise<number> {
  try {
    await (await build()).parseAsync(argv, { from: 'user' });
    return ctx.exitCode;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode;
    ctx.error(describe(e));
    return 1;
  }
}
