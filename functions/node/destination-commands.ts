import { listDestinationOptions, setDestinationOption } from '../../core/destinations/options.ts';
import { CLI_ACTOR, withRuntime } from './admin-commands.ts';
import type { CommandContext } from './cli-io.ts';

/** The bodies of `ecpds-edge destination option ...`; cli-destination.ts checked their arguments. */

export async function optionList(ctx: CommandContext, destination: string) {
  ctx.out(await withRuntime(ctx, ({ ports }) => listDestinationOptions(ports, destination)));
}

/** The value alone on stdout, for scripts; an option that is not set exits 1, as `git config` does. */
export async function optionShow(ctx: CommandContext, destination: string, name: string) {
  const options = await withRuntime(ctx, ({ ports }) => listDestinationOptions(ports, destination));
  const value = options[name];
  if (value !== undefined) return ctx.out(value);
  ctx.error(`${name} is not set for destination '${destination}'`);
  ctx.exitCode = 1;
}

export async function optionSet(ctx: CommandContext, destination: string, name: string, value: string | null) {
  const changed = await withRuntime(ctx, ({ ports }) =>
    setDestinationOption(ports, CLI_ACTOR, destination, name, value),
  );
  const of = `Option ${name} of destination '${destination}'`;
  if (value === null) ctx.out(changed ? `${of} removed.` : `${of} was not set.`);
  else ctx.out(changed ? `${of} set to '${value}'.` : `${of} is already '${value}'.`);
}
