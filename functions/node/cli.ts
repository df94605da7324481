import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { isServiceError } from '../../core/common/errors.ts';
import * as apiClients from '../../core/api-clients/clients.ts';
import * as metadataFields from '../../core/metadata/fields.ts';
import { setCategory } from '../../core/console/sign-in.ts';
import { exportNotes } from '../../core/metadata/notes.ts';
import { sweepExpired } from '../../core/data-files/handlers.ts';
import { importNotifications } from './monitoring-import.ts';
import { VERSION } from '../../core/system/version.ts';
import { ConfigError, parseConfig } from './config.ts';
import { jsonLogger } from './logger.ts';
import { openRuntime, type Runtime } from './runtime.ts';
import { runServer } from './server.ts';

const USAGE = `ecpds-edge ${VERSION}

Usage:
  ecpds-edge serve [--properties <file>]     serve the API (HTTPS)
  ecpds-edge migrate                         apply database migrations
  ecpds-edge client create <username> [--permission <regex>]...
  ecpds-edge client list
  ecpds-edge client show <username>
  ecpds-edge client update <username> --permission <regex>...   (replaces the list)
  ecpds-edge client reset-secret <username>
  ecpds-edge client delete <username>
  ecpds-edge webuser grant <id> <category>   assign an ACL category (e.g. administrator)
  ecpds-edge webuser revoke <id> <category>
  ecpds-edge fields import <file.json>        upsert metadata field definitions by name
  ecpds-edge fields export                   print every definition in the import format
  ecpds-edge notes export [--destination <name>]
  ecpds-edge monitoring import <file.ndjson>  ingest product step notifications
  ecpds-edge sweep                           fail expired data transfers once

Remote commands (talk to a running server; --url or ECPDS_URL, credentials from ECPDS_USERNAME and
ECPDS_SECRET or --config <file.json>; --insecure for a self-signed certificate; --json; --retries <n>):
  ecpds-edge put --destination <name> [--uniquename <u>] [--priority <0-99>] [--lifetime <d>] [--at <t>]
                 [--standby] [--force] [--concurrency <n>] <files or globs>...   exit code = failures
  ecpds-edge size <id>                       size of a data file in bytes
  ecpds-edge del <id>                        delete a data file
  ecpds-edge summary [<product> [<time>]] [--step <n>] [--type <t>] [--status <code>]
  ecpds-edge metadata get|put <destination> [file]   (stdin/stdout without a file)

Configuration comes from the environment (see README): DATABASE_URL, ECPDS_DATA_DIR, ...`;

const out = (value: unknown) => process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);

/** CLI commands log to stderr so their stdout stays machine-readable. */
async function withRuntime<T>(work: (runtime: Runtime) => Promise<T>): Promise<T> {
  const runtime = await openRuntime(parseConfig(process.env), jsonLogger((l) => process.stderr.write(l)), { hold: false });
  try {
    return await work(runtime);
  } finally {
    await runtime.close();
  }
}

const CLIENT_ACTIONS = new Set(['create', 'list', 'show', 'update', 'reset-secret', 'delete']);

async function client(args: string[]) {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { permission: { type: 'string', multiple: true } } });
  const [action, name] = positionals;
  // Checked before the database is opened: a mistyped command should not wait for it, or fail on it.
  if (!action || !CLIENT_ACTIONS.has(action)) throw new ConfigError(`unknown client command '${action ?? ''}'\n\n${USAGE}`);
  if (action !== 'list' && !name) throw new ConfigError(`client ${action} needs a <username>`);
  if (action === 'update' && !values.permission) throw new ConfigError('client update needs at least one --permission');
  const username = name ?? '';
  await withRuntime(async ({ ports }) => {
    switch (action) {
      case 'create': {
        const created = await apiClients.create(ports, 'cli', { username, permissions: values.permission ?? [], origin: 'cli' });
        out(`Client '${created.username}' created. Its secret is shown this once:\n${created.secret}`);
        return;
      }
      case 'list':
        return out(await apiClients.list(ports));
      case 'show':
        return out(await apiClients.show(ports, username));
      case 'update':
        return out(await apiClients.setPermissions(ports, 'cli', username, values.permission!));
      case 'reset-secret': {
        const reset = await apiClients.resetSecret(ports, 'cli', username);
        out(`New secret of '${reset.username}' (the old one no longer works), shown this once:\n${reset.secret}`);
        return;
      }
      case 'delete':
        await apiClients.remove(ports, 'cli', username);
        return out(`Client '${username}' deleted.`);
    }
  });
}

async function webuser(args: string[]) {
  const [action, id, category] = args;
  if ((action !== 'grant' && action !== 'revoke') || !id || !category) {
    throw new ConfigError(`usage: ecpds-edge webuser grant|revoke <id> <category>\n\n${USAGE}`);
  }
  await withRuntime(({ ports }) => setCategory(ports, 'cli', id, category, action === 'grant'));
  out(action === 'grant' ? `Category '${category}' assigned to '${id}'.` : `Category '${category}' removed from '${id}'.`);
}

async function fields(args: string[]) {
  const [action, file] = args;
  if (action === 'import') {
    if (!file) throw new ConfigError('fields import needs a <file.json>');
    let definitions: unknown;
    try {
      definitions = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (e) {
      throw new ConfigError(`cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
    }
    const result = await withRuntime(({ ports }) => metadataFields.importFields(ports, 'cli', definitions));
    return out(`Fields imported: ${result.created} created, ${result.updated} updated.`);
  }
  if (action === 'export') return out(await withRuntime(({ ports }) => metadataFields.exportFields(ports)));
  throw new ConfigError(`unknown fields command '${action ?? ''}'\n\n${USAGE}`);
}

async function notes(args: string[]) {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { destination: { type: 'string' } } });
  if (positionals[0] !== 'export') throw new ConfigError(`unknown notes command '${positionals[0] ?? ''}'\n\n${USAGE}`);
  const all = await withRuntime(async ({ ports }) => {
    if (values.destination && !(await ports.repos.destinations.exists(values.destination))) {
      throw new ConfigError(`Destination ${values.destination} not found`);
    }
    return exportNotes(ports, values.destination);
  });
  out(all);
}

async function monitoring(args: string[]) {
  const [action, file] = args;
  if (action !== 'import' || !file) throw new ConfigError(`usage: ecpds-edge monitoring import <file.ndjson>\n\n${USAGE}`);
  if (!fs.existsSync(file)) throw new ConfigError(`cannot read ${file}: no such file`);
  const counts = await withRuntime(({ ports }) => importNotifications(ports, file));
  out(`Notifications: ${counts.accepted} accepted, ${counts.ignored} ignored, ${counts.refused} refused, ${counts.bad} bad lines.`);
}

export async function main(argv: string[]) {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve': {
      const { values } = parseArgs({ args: rest, options: { properties: { type: 'string' } } });
      await runServer(parseConfig(process.env, { propertiesFile: values.properties }));
      return;
    }
    case 'migrate':
      await withRuntime(async () => out('Database migrated.'));
      return;
    case 'client':
      return client(rest);
    case 'webuser':
      return webuser(rest);
    case 'fields':
      return fields(rest);
    case 'notes':
      return notes(rest);
    case 'monitoring':
      return monitoring(rest);
    case 'put': return (await import('./remote-cli.ts')).put(rest);
    case 'size': return (await import('./remote-cli.ts')).size(rest);
    case 'del': return (await import('./remote-cli.ts')).del(rest);
    case 'summary': return (await import('./remote-cli.ts')).summary(rest);
    case 'metadata': return (await import('./remote-cli.ts')).metadata(rest);
    case 'sweep': {
      const failed = await withRuntime(({ ports }) => sweepExpired(ports));
      return out(`Expired transfers failed: ${failed}.`);
    }
    case 'version':
    case '--version':
      return out(VERSION);
    case undefined:
    case 'help':
    case '--help':
      return out(USAGE);
    default:
      throw new ConfigError(`unknown command '${command}'\n\n${USAGE}`);
  }
}

main(process.argv.slice(2)).catch((e: unknown) => {
  const known = e instanceof ConfigError || isServiceError(e) || (e instanceof Error && e.name === 'TypeError' && 'code' in e);
  process.stderr.write(`ecpds-edge: ${e instanceof Error ? (known ? e.message : (e.stack ?? e.message)) : String(e)}\n`);
  process.exit(1);
});
