import type { Command } from 'commander';
import { ConfigError } from './config.ts';

/** The full name of a command as typed: `ecpds-edge client create`. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** The usage a command declares, without an `[options]` it does not have (only --help). */
export const termUsage = (command: Command) =>
  command.options.length === 0 ? command.usage().replace(/\s*\[options\]/g, '') : command.usage();

/** One usage line per sub-command of a group, as the error for a mistyped one shows them. */
export function usageOf(group: Command): string {
  const lines = group.commands
    .filter((c) => c.name() !== 'help')
    .map((c) => `  ${commandPath(c)} ${termUsage(c)}`.trimEnd());
  return `Usage:\n${lines.join('\n')}\n\nSee \`${commandPath(group)} --help\`.`;
}

/**
 * A command whose first argument names a sub-command (`client create ...`). A missing or
 * unknown one is refused with the group's usage lines, before anything else is done.
 */
export function commandGroup(
  parent: Command,
  name: string,
  description: string,
  unknown: (group: Command, given: string) => string = (group, given) =>
    `unknown ${name} command '${given}'\n\n${usageOf(group)}`,
): Command {
  const group = parent
    .command(name)
    .usage('<command> [options]')
    .description(description)
    .argument('[command]')
    .allowExcessArguments()
    .allowUnknownOption();
  group.action((given: string | undefined) => {
    throw new ConfigError(unknown(group, given ?? ''));
  });
  return group;
}
