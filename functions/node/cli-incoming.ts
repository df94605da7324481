import type { Command } from 'commander';
import { portalOperations } from '../../core/portal/operation-names.ts';
import { checkPortalOption, PORTAL_OPTIONS } from '../../core/portal/options.ts';
import { PORTAL_OPERATIONS } from '../../core/portal/ports.ts';
import { commandGroup, usageOf } from './cli-help.ts';
import type { CommandContext } from './cli-io.ts';
import { runServed } from './cli-served.ts';
import { ConfigError } from './config.ts';

/**
 * `ecpds-edge incoming ...`: an incoming user's data portal access (permissions, options,
 * subscribers, keys). Arguments are checked here, before the database is opened; the bodies are in
 * incoming-commands.ts.
 */
type Bodies = typeof import('./incoming-commands.ts');

/**
 * Runs a body here, or hands the whole command to the running server that holds the embedded
 * database (command-forward.ts), which runs it as its own change, with the same output.
 */
const run = (ctx: CommandContext, body: (bodies: Bodies) => Promise<void>) =>
  runServed(ctx, () => import('./incoming-commands.ts'), body);

const INCOMING_ID = /^[A-Za-z0-9_.@]{1,128}$/;
const SUBSCRIBER_ID = /^[1-9]\d{0,15}$/;

function userId(id: string | undefined, usage: string): string {
  if (!id) throw new ConfigError(usage);
  if (!INCOMING_ID.test(id)) {
    throw new ConfigError(`'${id}' is not an incoming user id (1 to 128 letters, digits, '_', '.' or '@')`);
  }
  return id;
}

const OPTIONS_HELP = `
Options of the data portal (a user without one gets the default):
${Object.entries(PORTAL_OPTIONS)
  .map(([name, expects]) => `  ${name.padEnd(31)} ${expects}`)
  .join('\n')}`;

export function addIncomingCommands(program: Command, ctx: CommandContext) {
  const usage = (group: Command) =>
    `usage: ecpds-edge incoming permission|option|subscriber|key <id> ...\n\n${usageOf(group)}`;
  const incoming = commandGroup(program, 'incoming', "incoming users' data portal access", usage);

  const permissionUsage = 'usage: ecpds-edge incoming permission <id> [grant|revoke <operation>...]';
  incoming
    .command('permission')
    .usage('<id> [grant|revoke <operation>...]')
    .description(`list the portal operations a user may do, or grant or revoke some (${PORTAL_OPERATIONS.join(', ')})`)
    .argument('[id]')
    .argument('[action]')
    .argument('[operations...]')
    .action(async (id: string | undefined, action: string | undefined, operations: string[]) => {
      const user = userId(id, permissionUsage);
      if (action === undefined) return run(ctx, (b) => b.permissionList(ctx, user));
      if (action !== 'grant' && action !== 'revoke') {
        throw new ConfigError(`unknown permission action '${action}' (grant or revoke expected)\n\n${permissionUsage}`);
      }
      const checked = portalOperations(operations);
      await run(ctx, (b) => b.permissionChange(ctx, user, action, checked));
    });

  const optionUsage = 'usage: ecpds-edge incoming option <id> [<name> [<value>] | <name> --unset]';
  incoming
    .command('option')
    .usage('<id> [<name> [<value>]] [--unset]')
    .description("show a user's portal options, or one; set one to a value; --unset removes it")
    .argument('[id]')
    .argument('[name]')
    .argument('[value]')
    .option('--unset', 'remove the option: the default applies again')
    .addHelpText('after', OPTIONS_HELP)
    .action(async (id: string | undefined, name: string | undefined, value: string | undefined, o: Unset) => {
      const user = userId(id, optionUsage);
      if (name === undefined) {
        if (o.unset) throw new ConfigError(`--unset needs the <name> of an option\n\n${optionUsage}`);
        return run(ctx, (b) => b.optionList(ctx, user));
      }
      if (o.unset) {
        if (value !== undefined) throw new ConfigError('give a <value> or --unset, not both');
        return run(ctx, (b) => b.optionSet(ctx, user, name, null));
      }
      // An unknown name is refused even to show it: a typo should not read as "not set".
      const refusal = checkPortalOption(name, value?.trim() ?? '');
      if (refusal !== null && (value !== undefined || !Object.hasOwn(PORTAL_OPTIONS, name))) {
        throw new ConfigError(refusal);
      }
      if (value === undefined) return run(ctx, (b) => b.optionShow(ctx, user, name));
      await run(ctx, (b) => b.optionSet(ctx, user, name, value));
    });

  const subscriberUsage =
    'usage: ecpds-edge incoming subscriber <id> [list | approve <subscriberId> | revoke <subscriberId>]';
  incoming
    .command('subscriber')
    .usage('<id> [list | approve|revoke <subscriberId>]')
    .description('list the subscribers of a self-service user, approve a verified one (mails its password), revoke one')
    .argument('[id]')
    .argument('[action]')
    .argument('[subscriberId]')
    .action(async (id: string | undefined, action: string | undefined, subscriber: string | undefined) => {
      const user = userId(id, subscriberUsage);
      if (action === undefined || action === 'list') {
        if (subscriber !== undefined) throw new ConfigError(`list takes no <subscriberId>\n\n${subscriberUsage}`);
        return run(ctx, (b) => b.subscriberList(ctx, user));
      }
      if (action !== 'approve' && action !== 'revoke') {
        throw new ConfigError(`unknown subscriber action '${action}' (list, approve or revoke expected)`);
      }
      if (subscriber === undefined || !SUBSCRIBER_ID.test(subscriber)) {
        throw new ConfigError(
          `subscriber ${action} needs the number of a subscriber (see \`ecpds-edge incoming subscriber ${user} list\`)`,
        );
      }
      await run(ctx, (b) => b.subscriberChange(ctx, user, action, Number(subscriber)));
    });

  const keyUsage = 'usage: ecpds-edge incoming key <id> [list | add <public key line> | remove <SHA256:fingerprint>]';
  incoming
    .command('key')
    .usage('<id> [list | add <public key line> | remove <fingerprint>]')
    .description(
      "list a user's public keys for the portal's SFTP server (fingerprints), add one (an OpenSSH " +
        'public key line, e.g. "$(cat id_ed25519.pub)"), or remove one by its fingerprint',
    )
    .argument('[id]')
    .argument('[action]')
    .argument('[key...]')
    .action(async (id: string | undefined, action: string | undefined, words: string[]) => {
      const user = userId(id, keyUsage);
      if (action === undefined || action === 'list') {
        if (words.length > 0) throw new ConfigError(`list takes nothing more\n\n${keyUsage}`);
        return run(ctx, (b) => b.keyList(ctx, user));
      }
      if (action !== 'add' && action !== 'remove') {
        throw new ConfigError(`unknown key action '${action}' (list, add or remove expected)\n\n${keyUsage}`);
      }
      if (words.length === 0) throw new ConfigError(keyUsage);
      if (action === 'add') return run(ctx, (b) => b.keyAdd(ctx, user, words.join(' ')));
      if (words.length !== 1) throw new ConfigError(`remove takes one fingerprint\n\n${keyUsage}`);
      await run(ctx, (b) => b.keyRemove(ctx, user, words[0]!));
    });
}

type Unset = { unset?: boolean };
