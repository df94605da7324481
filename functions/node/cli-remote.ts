import { type Command, Option } from 'commander';
import { commandGroup, usageOf } from './cli-help.ts';
import type { CommandContext } from './cli-io.ts';
import { ConfigError } from './config.ts';
import type { ConnectionValues, PutValues, SummaryValues } from './remote-cli.ts';

/**
 * The commands for pipelines, which talk to a running server (put, size, del, summary,
 * metadata get|put). Their bodies (the typed client and the catalogue's schemas) are loaded
 * only when one of them runs.
 */
const bodies = () => import('./remote-cli.ts');

export const REMOTE_COMMANDS = new Set(['put', 'size', 'del', 'summary', 'metadata']);

/** `--url`, `--config`, ... on every remote command, in a help group of their own. */
function withConnectionOptions(command: Command): Command {
  const options = [
    new Option('--url <url>', 'the server (else ECPDS_URL)'),
    new Option('--config <file.json>', 'url, username, secret and insecure from a JSON file'),
    new Option('--insecure', 'accept a self-signed certificate (or ECPDS_INSECURE=1)'),
    new Option('--timeout <seconds>', 'bound on each request (default 60)'),
    new Option('--json', 'print JSON'),
    new Option('--retries <n>', 'retries after a 503, a 429 or a network failure (default 4)'),
    new Option('--retry-delay <ms>', 'first wait between attempts, doubled each time (default 500)'),
  ];
  for (const option of options) command.addOption(option.helpGroup('Connection options:'));
  return command;
}

export function addRemoteCommands(program: Command, ctx: CommandContext) {
  const put = program
    .command('put')
    .usage('--destination <name> [options] <files>...')
    .description('register files for a destination; the exit code is the number of failures (at most 100)')
    .argument('[files...]')
    .option('--destination <name>', 'the destination (required)')
    .option('--uniquename <u>', 'unique name of the transfer')
    .option('--priority <0-99>', 'transfer priority')
    .option('--lifetime <d>', 'how long the transfer is kept (e.g. 2d)')
    .option('--at <t>', 'when to transfer')
    .option('--standby', 'register it on standby')
    .option('--force', 'replace an existing transfer')
    .option('--concurrency <n>', 'requests at a time (default 4)');
  withConnectionOptions(put).action(async (files: string[], values: PutValues) =>
    (await bodies()).put(ctx, files, values),
  );

  withConnectionOptions(program.command('size').usage('<id> [options]').description('size of a data file in bytes'))
    .argument('[id]')
    .action(async (id: string | undefined, values: ConnectionValues) => (await bodies()).size(ctx, id, values));

  withConnectionOptions(program.command('del').usage('<id> [options]').description('delete a data file'))
    .argument('[id]')
    .action(async (id: string | undefined, values: ConnectionValues) => (await bodies()).del(ctx, id, values));

  const summary = program
    .command('summary')
    .usage('[product [time]] [options]')
    .description('the step status table, of every product, one product or one cycle')
    .argument('[product]')
    .argument('[time]')
    .option('--step <n>', 'only this step')
    .option('--type <t>', 'only this type')
    .option('--status <code>', 'only this status');
  withConnectionOptions(summary).action(
    async (product: string | undefined, time: string | undefined, values: SummaryValues) =>
      (await bodies()).summary(ctx, product, time, values),
  );

  const usage = 'usage: ecpds-edge metadata get|put <destination> [file]';
  const metadata = commandGroup(
    program,
    'metadata',
    'metadata values of a destination, as JSON',
    (group) => `${usage}\n\n${usageOf(group)}`,
  );
  for (const [action, description] of [
    ['get', 'write the values to the file (stdout without one, or with -)'],
    ['put', 'replace the values with those of the file (stdin without one, or with -)'],
  ] as const) {
    withConnectionOptions(metadata.command(action))
      .usage('<destination> [file] [options]')
      .description(description)
      .argument('[destination]')
      .argument('[file]')
      .action(async (name: string | undefined, file: string | undefined, values: ConnectionValues) => {
        if (!name) throw new ConfigError(usage);
        const remote = await bodies();
        await (action === 'get' ? remote.metadataGet : remote.metadataPut)(ctx, name, file, values);
      });
  }
}
