import type { Command } from 'commander';
import { VERSION } from '../../core/system/version.ts';
import { addAdminCommands } from './cli-admin.ts';
import { type CliIo, CommandContext } from './cli-io.ts';
import { rootCommand, runProgram } from './cli-program.ts';
import { addRemoteCommands, REMOTE_COMMANDS } from './cli-remote.ts';
import { ConfigError } from './config.ts';

export type { CliIo } from './cli-io.ts';

const AFTER_HELP = `
Configuration comes from the environment (see docs/reference.md): DATABASE_URL, ECPDS_DATA_DIR, ...
Remote commands take the server from --url or ECPDS_URL, and credentials from ECPDS_USERNAME and
ECPDS_SECRET or --config <file.json>, never from the command line.
Run \`ecpds-edge <command> --help\` for the options of a command.`;

function program(ctx: CommandContext): Command {
  const { io } = ctx;
  const root = rootCommand(io)
    .description(`ecpds-edge ${VERSION}: the data dissemination API and its command line`)
    .version(VERSION, '-V, --version', 'print the version')
    .usage('<command> [options]')
    .argument('[command]')
    .addHelpText('after', AFTER_HELP)
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

/**
 * Runs one command line and returns its exit code. Nothing here calls process.exit, so tests
 * run commands in their own process; only `serve` keeps running (and exits on a signal).
 */
export async function main(argv: string[], io: CliIo): Promise<number> {
  const ctx = new CommandContext(io, argv);
  return runProgram(ctx, argv, async () => {
    if (REMOTE_COMMANDS.has(argv[0] ?? '')) {
      // Before commander reads them, so a secret given as an option is refused, not parsed.
      (await import('./remote-connection.ts')).refuseCredentialFlags(argv.slice(1));
    }
    return program(ctx);
  });
}
