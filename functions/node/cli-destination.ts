import type { Command } from 'commander';
import { splitOptionName } from '../../core/hosts/options.ts';
import { checkWis2Option, WIS2_OPTIONS } from '../../core/wis2/options.ts';
import type { CommandContext } from './cli-io.ts';
import { runServed } from './cli-served.ts';
import { ConfigError } from './config.ts';

/**
 * `ecpds-edge destination option ...`: a destination's options, as `POST /v1/destination/option` sets
 * them. The name, and a `wis2.*` value, are checked here before the database is opened; the rules that
 * need it (a core data topic needs an open-access user) are the body's (destination-commands.ts).
 */
const bodies = () => import('./destination-commands.ts');
type Bodies = Awaited<ReturnType<typeof bodies>>;
const served = (ctx: CommandContext, body: (bodies: Bodies) => Promise<void>) => runServed(ctx, bodies, body);

const USAGE = 'usage: ecpds-edge destination option <name> [<option> [<value>] | <option> --unset]';

const HELP = `
WIS2 options (see docs/consumers.md, WIS2 notifications):
${Object.entries(WIS2_OPTIONS)
  .map(([name, expects]) => `  ${name.padEnd(17)} ${expects}`)
  .join('\n')}
An empty wis2.topic is none: the destination publishes nothing.`;

/** Refuses a malformed name, or a `wis2.*` value the destination could never take, as the usage error it is. */
function checked(name: string, value: string | undefined) {
  try {
    splitOptionName(name);
  } catch (e) {
    throw new ConfigError(`${(e as Error).message}: an option is named <module>.<key>, e.g. wis2.topic`);
  }
  if (!name.startsWith('wis2.')) return;
  const given = name === 'wis2.topic' ? value?.trim() : value;
  // An empty topic is none; a name alone (to show or remove it) need only be known.
  if (name === 'wis2.topic' && given === '') return;
  const refusal =
    given === undefined
      ? Object.hasOwn(WIS2_OPTIONS, name)
        ? null
        : checkWis2Option(name, '')
      : checkWis2Option(name, given);
  if (refusal !== null) throw new ConfigError(refusal);
}

export function addDestinationOptionCommand(destination: Command, ctx: CommandContext) {
  destination
    .command('option')
    .usage('<name> [<option> [<value>]] [--unset]')
    .description("show a destination's options, or one; set one to a value (checked first); --unset removes it")
    .argument('[name]')
    .argument('[option]')
    .argument('[value]')
    .option('--unset', 'remove the option')
    .addHelpText('after', HELP)
    .action(async (name: string | undefined, option: string | undefined, value: string | undefined, o: Unset) => {
      if (!name) throw new ConfigError(USAGE);
      if (option === undefined) {
        if (o.unset) throw new ConfigError(`--unset needs the <option> to remove\n\n${USAGE}`);
        return served(ctx, (b) => b.optionList(ctx, name));
      }
      checked(option, o.unset ? undefined : value);
      if (o.unset) {
        if (value !== undefined) throw new ConfigError('give a <value> or --unset, not both');
        return served(ctx, (b) => b.optionSet(ctx, name, option, null));
      }
      if (value === undefined) return served(ctx, (b) => b.optionShow(ctx, name, option));
      await served(ctx, (b) => b.optionSet(ctx, name, option, value));
    });
}

type Unset = { unset?: boolean };
