import type { Command } from 'commander';
import { parsePriority } from '../../core/dissemination/priority.ts';
import { addDestinationOptionCommand } from './cli-destination.ts';
import { commandGroup, usageOf } from './cli-help.ts';
import type { CommandContext } from './cli-io.ts';
import { runServed } from './cli-served.ts';
import { ConfigError } from './config.ts';

/**
 * The operators' commands on destinations, transfers, Acquisition hosts and console users: run here, or
 * by the running server that holds the embedded database (cli-served.ts). Arguments are checked before
 * the database is opened, as in cli-admin.ts.
 */
const bodies = () => import('./admin-commands.ts');
type Bodies = Awaited<ReturnType<typeof bodies>>;
const served = (ctx: CommandContext, body: (bodies: Bodies) => Promise<void>) => runServed(ctx, bodies, body);

/** The groups of cli-served.ts other than `incoming`: what a running server also takes from the command line. */
export function addServedAdminCommands(program: Command, ctx: CommandContext) {
  addDestinationCommands(program, ctx);
  addTransferCommands(program, ctx);
  addHostCommands(program, ctx);
  addWebuserCommands(program, ctx);
}

function addDestinationCommands(program: Command, ctx: CommandContext) {
  // The group's usage lines (usageOf) name `option` too.
  const usage = (group: Command) => `usage: ecpds-edge destination start|hold|stop <name>\n\n${usageOf(group)}`;
  const destination = commandGroup(program, 'destination', 'start, hold or stop a destination; its options', usage);
  for (const [action, description] of [
    ['start', 'start sending (a new, restored or demo destination sends nothing until started)'],
    ['hold', 'stop sending until started again'],
    ['stop', 'stop the destination'],
  ] as const) {
    destination
      .command(action)
      .usage('<name>')
      .description(description)
      .argument('[name]')
      .action(async (name: string | undefined) => {
        if (!name) throw new ConfigError(usage(destination));
        await served(ctx, (b) => b.destination(ctx, action, name));
      });
  }
  addDestinationOptionCommand(destination, ctx);
}

const STATUSES = ['INIT', 'SCHE', 'FETC', 'WAIT', 'EXEC', 'DONE', 'RETR', 'STOP', 'FAIL', 'HOLD', 'INTR'];

/** The <id> argument of a transfer command, checked before the database is opened. */
function transferId(id: string | undefined, command: string): number {
  if (!id || !/^[1-9]\d{0,15}$/.test(id)) throw new ConfigError(`transfer ${command} needs the <id> of a transfer`);
  return Number(id);
}

function addTransferCommands(program: Command, ctx: CommandContext) {
  const usage = (group: Command) =>
    `usage: ecpds-edge transfer list|show|requeue|hold|stop|priority ...\n\n${usageOf(group)}`;
  const transfer = commandGroup(program, 'transfer', 'data transfers and their history', usage);
  transfer
    .command('list')
    .description('the newest transfers (up to 1,000) as JSON')
    .option('--destination <name>', 'only this destination')
    .option('--status <code>', `only this status (${STATUSES.join(', ')})`)
    .action(async (options: { destination?: string; status?: string }) => {
      const status = options.status?.toUpperCase();
      if (status !== undefined && !STATUSES.includes(status)) {
        throw new ConfigError(`--status: '${options.status}' (one of ${STATUSES.join(', ')} expected)`);
      }
      await served(ctx, (b) => b.transferList(ctx, { destination: options.destination, status }));
    });
  for (const [action, description] of [
    ['requeue', 'send it again (stored as RETR)'],
    ['hold', 'keep it from being sent until requeued'],
    ['stop', 'stop it for good'],
  ] as const) {
    transfer
      .command(action)
      .usage('<id>')
      .description(description)
      .argument('[id]')
      .action(async (id: string | undefined) => {
        const checked = transferId(id, action);
        await served(ctx, (b) => b.transferChange(ctx, action, checked));
      });
  }
  transfer
    .command('priority')
    .usage('<id> <0-99>')
    .description('set its priority (0 is sent first), with a history row')
    .argument('[id]')
    .argument('[priority]')
    .action(async (id: string | undefined, priority: string | undefined) => {
      const checked = transferId(id, 'priority');
      if (priority === undefined) throw new ConfigError('transfer priority needs a <priority> from 0 to 99');
      const parsed = parsePriority(priority);
      if ('refusal' in parsed) throw new ConfigError(parsed.refusal);
      await served(ctx, (b) => b.transferPriority(ctx, checked, priority));
    });
  transfer
    .command('show')
    .usage('<id>')
    .description('one transfer with its history, as JSON')
    .argument('[id]')
    .action(async (id: string | undefined) => {
      const checked = transferId(id, 'show');
      await served(ctx, (b) => b.transferShow(ctx, checked));
    });
}

function addHostCommands(program: Command, ctx: CommandContext) {
  const usage = (group: Command) => `usage: ecpds-edge host output <id>\n\n${usageOf(group)}`;
  const host = commandGroup(program, 'host', 'Acquisition hosts and their runs', usage);
  host
    .command('output')
    .usage('<id>')
    .description('the last run of an Acquisition host: each entry listed, selected or not, and why')
    .argument('[id]')
    .action(async (id: string | undefined) => {
      if (!id || !/^[1-9]\d{0,15}$/.test(id)) throw new ConfigError('host output needs the <id> of a host');
      await served(ctx, (b) => b.hostOutput(ctx, Number(id)));
    });
}

function addWebuserCommands(program: Command, ctx: CommandContext) {
  const usage = (group: Command) => `usage: ecpds-edge webuser grant|revoke <id> <category>\n\n${usageOf(group)}`;
  const webuser = commandGroup(program, 'webuser', 'console user categories', usage);
  for (const [action, description] of [
    ['grant', 'assign an ACL category (e.g. administrator)'],
    ['revoke', 'remove an ACL category'],
  ] as const) {
    webuser
      .command(action)
      .usage('<id> <category>')
      .description(description)
      .argument('[id]')
      .argument('[category]')
      .action(async (id: string | undefined, category: string | undefined) => {
        if (!id || !category) throw new ConfigError(usage(webuser));
        await served(ctx, (b) => b.webuser(ctx, action === 'grant', id, category));
      });
  }
}
