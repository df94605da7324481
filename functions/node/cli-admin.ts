import fs from 'node:fs';
import type { Command } from 'commander';
import { commandGroup, usageOf } from './cli-help.ts';
import { addIncomingCommands } from './cli-incoming.ts';
import type { CommandContext } from './cli-io.ts';
import { addServedAdminCommands } from './cli-operations.ts';
import { ConfigError, parseConfig } from './config.ts';

/**
 * The commands that work on the database (and `serve`). Each checks its arguments here, before
 * the database is opened: a mistyped command should not wait for the database, or fail on it.
 * The bodies, and the drivers they need, are loaded only once a command is known to be valid.
 */
const bodies = () => import('./admin-commands.ts');

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

export function addAdminCommands(program: Command, ctx: CommandContext) {
  program
    .command('serve')
    .description('serve the API (HTTPS) until SIGTERM or SIGINT')
    .option('--properties <file>', 'provision [API] clients from an ecpds.properties file')
    .action(async (options: { properties?: string }) => {
      const config = parseConfig(ctx.io.env, { propertiesFile: options.properties });
      await (await import('./server.ts')).runServer(config);
    });

  program
    .command('mover')
    .description('run a data mover: claim due transfers and send them, until SIGTERM or SIGINT')
    .option('--name <name>', 'the name its claims carry (default: host name and process id)')
    .option('--concurrency <n>', 'transfers sent at once (default: ECPDS_MOVER_CONCURRENCY or 8)')
    .action(async (options: { name?: string; concurrency?: string }) => {
      const concurrency = options.concurrency === undefined ? undefined : Number(options.concurrency);
      if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= 1024)) {
        throw new ConfigError(`--concurrency must be a whole number from 1 to 1024, got '${options.concurrency}'`);
      }
      const config = parseConfig(ctx.io.env);
      const mover = {
        ...config.mover,
        ...(options.name !== undefined && { name: options.name }),
        ...(concurrency !== undefined && { concurrency }),
      };
      await (await import('./mover.ts')).runMoverProcess({ ...config, mover });
    });

  program
    .command('migrate')
    .description('apply database migrations')
    .action(async () => (await bodies()).migrate(ctx));

  addClientCommands(program, ctx);
  addServedAdminCommands(program, ctx);
  addIncomingCommands(program, ctx);
  addFieldsCommands(program, ctx);

  const notes = commandGroup(program, 'notes', 'HTML notes of the destinations');
  notes
    .command('export')
    .description('print the notes of every destination, or of one')
    .option('--destination <name>', 'only this destination')
    .action(async (options: { destination?: string }) => (await bodies()).notesExport(ctx, options.destination));

  const monitoring = commandGroup(
    program,
    'monitoring',
    'product step notifications',
    (group) => `usage: ecpds-edge monitoring import <file.ndjson>\n\n${usageOf(group)}`,
  );
  monitoring
    .command('import')
    .usage('<file.ndjson>')
    .description('ingest product step notifications, one JSON object a line')
    .argument('[file]')
    .action(async (file: string | undefined) => {
      if (!file) throw new ConfigError(`usage: ecpds-edge monitoring import <file.ndjson>\n\n${usageOf(monitoring)}`);
      const absolute = ctx.resolve(file);
      if (!fs.existsSync(absolute)) throw new ConfigError(`cannot read ${file}: no such file`);
      await (await bodies()).monitoringImport(ctx, absolute);
    });

  program
    .command('sweep')
    .description('fail expired data transfers once')
    .action(async () => (await bodies()).sweep(ctx));
}

function addClientCommands(program: Command, ctx: CommandContext) {
  const client = commandGroup(
    program,
    'client',
    'manage API clients',
    (group, name) => `unknown client command '${name}'\n\n${usageOf(group)}`,
  );
  const named = (action: 'show' | 'reset-secret' | 'delete', description: string) =>
    client
      .command(action)
      .usage('<username>')
      .description(description)
      .argument('[username]')
      .action(async (username: string | undefined) => {
        if (!username) throw new ConfigError(`client ${action} needs a <username>`);
        await (await bodies()).client(ctx, action, username);
      });

  client
    .command('create')
    .usage('<username> [--permission <regex>]...')
    .description('create a client; its generated secret is printed once')
    .argument('[username]')
    .option('--permission <regex>', 'a service name expression it may call (repeatable)', collect)
    .action(async (username: string | undefined, options: { permission?: string[] }) => {
      if (!username) throw new ConfigError('client create needs a <username>');
      await (await bodies()).client(ctx, 'create', username, options.permission);
    });
  client
    .command('list')
    .description('every client as JSON, without secrets')
    .action(async () => (await bodies()).client(ctx, 'list', ''));
  named('show', 'one client as JSON, without its secret');
  client
    .command('update')
    .usage('<username> --permission <regex>...')
    .description('replace the permission list of a client')
    .argument('[username]')
    .option('--permission <regex>', 'a service name expression it may call (repeatable)', collect)
    .action(async (username: string | undefined, options: { permission?: string[] }) => {
      if (!username) throw new ConfigError('client update needs a <username>');
      if (!options.permission) throw new ConfigError('client update needs at least one --permission');
      await (await bodies()).client(ctx, 'update', username, options.permission);
    });
  named('reset-secret', 'generate a new secret (the old one stops working), printed once');
  named('delete', 'delete a client');
}

function addFieldsCommands(program: Command, ctx: CommandContext) {
  const fields = commandGroup(program, 'fields', 'metadata field definitions');
  fields
    .command('import')
    .usage('<file.json>')
    .description('upsert metadata field definitions by name')
    .argument('[file]')
    .action(async (file: string | undefined) => {
      if (!file) throw new ConfigError('fields import needs a <file.json>');
      let definitions: unknown;
      try {
        definitions = JSON.parse(fs.readFileSync(ctx.resolve(file), 'utf8'));
      } catch (e) {
        throw new ConfigError(`cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
      }
      await (await bodies()).fieldsImport(ctx, definitions);
    });
  fields
    .command('export')
    .description('print every definition in the import format')
    .action(async () => (await bodies()).fieldsExport(ctx));
}
