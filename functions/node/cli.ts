import { Command, CommanderError } from 'commander';
import { isServiceError } from '../../core/common/errors.ts';
import { VERSION } from '../../core/system/version.ts';
import { addAdminCommands } from './cli-admin.ts';
import { type CliIo, CommandContext } from './cli-io.ts';
import { addRemoteCommands, REMOTE_COMMANDS } from './cli-remote.ts';
import { ConfigError } from './config.ts';

export type { CliIo } from './cli-io.ts';

const AFTER_HELP = `
Configuration comes from the environment (see README): DATABASE_URL, ECPDS_DATA_DIR, ...
Remote commands take the server from --url or ECPDS_URL, and credentials from ECPDS_USERNAME and
ECPDS_SECRET or --config <file.json>, never from the command line.
Run \`ecpds-edge <command> --help\` for the options of a command.`;

function program(ctx: CommandContext): Command {
  const { io } = ctx;
  const root = new Command('ecpds-edge')
    .description(`ecpds-edge ${VERSION}: the data dissemination API and its command line`)
    .version(VERSION, '-V, --version', 'print the version')
    .usage('<command> [options]')
    .argument('[command]')
    .addHelpText('after', AFTER_HELP)
    // Exit codes are returned, never process.exit: main also runs inside a test's process.
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      outputError: (text, write) => write(`ecpds-edge: ${text.replace(/^error: /, '')}`),
      getOutHelpWidth: () => (io.stdout as { columns?: number }).columns ?? 100,
      getErrHelpWidth: () => (io.stderr as { columns?: number }).columns ?? 100,
    })
    .configureHelp({
      // The usage each command declares (`create <username>`), not commander's generic one; a
      // listing leaves out `[options]`, which the command's own help lists.
      subcommandTerm: (command) => `${command.name()} ${command.usage().replace(/\s*\[options\]/g, '')}`.trimEnd(),
      sortSubcommands: false,
    });
  root.commandsGroup('Commands on the database:');
  addAdminCommands(root, ctx);
  root.commandsGroup('Remote commands (talk to a running server):');
  addRemoteCommands(root, ctx);
  root.commandsGroup('Other commands:');
  root
    .command('version')
    .description('print the version')
    .action(() => ctx.out(VERSION));
  root.helpCommand('help [command]', 'help for a command');
  root.action((given: string | undefined) => {
    if (given === undefined) return root.outputHelp();
    throw new ConfigError(`unknown command '${given}' (see \`ecpds-edge --help\`)`);
  });
  return root;
}

/** A message for what an operator can fix; a stack trace for what is a bug. */
function describe(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const known = e instanceof ConfigError || isServiceError(e) || (e.name === 'TypeError' && 'code' in e);
  return known ? e.message : (e.stack ?? e.message);
}

/**
 * Runs one command line and returns its exit code. Nothing here calls process.exit, so tests
 * run commands in their own process; only `serve` keeps running (and exits on a signal).
 */
export async function main(argv: string[], io: CliIo): Promise<number> {
  const ctx = new CommandContext(io);
  try {
    if (REMOTE_COMMANDS.has(argv[0] ?? '')) {
      // Before commander reads them, so a secret given as an option is refused, not parsed.
      (await import('./remote-connection.ts')).refuseCredentialFlags(argv.slice(1));
    }
    await program(ctx).parseAsync(argv, { from: 'user' });
    return ctx.exitCode;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode;
    ctx.error(describe(e));
    return 1;
  }
}
