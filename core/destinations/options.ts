import { invalid, notFound } from '../common/errors.ts';
import { recordIn } from '../console/audit.ts';
import { requeueOnProblem } from '../data-files/requeue-on.ts';
import { checkDestinationOptions } from '../data-files/scheduler-options.ts';
import { readOptions, rewriteOptions, setOption, splitOptionName } from '../hosts/options.ts';
import { portalMode } from '../portal/login.ts';
import type { Ports, Repositories } from '../ports.ts';
import { checkWis2Options, wis2Settings } from '../wis2/options.ts';
import { coreTopicRefusal } from '../wis2/topic.ts';

/**
 * A destination's options (its `data`: `scheduler.*`, `incoming.*`, `alias.*`, `wis2.*` lines), set one
 * at a time as a host's are (wire-decisions §8: one line upserted, every other byte kept), from the API,
 * the command line or the console, each change checked as a restore checks them and audited.
 */

/** The active open-access incoming users associated with the destination: its public ways into the portal. */
export async function openAccessUsers(repos: Repositories, destination: string): Promise<string[]> {
  const users = await repos.incomingUsers.list({ destination });
  return users.filter((u) => u.active && portalMode(u.portalService) === 'open-access').map((u) => u.id);
}

/**
 * Refuses an options text a destination can't have: scheduler and alias options it can't read, `wis2.*`
 * options that are wrong, and, when `topicWritten`, a core data topic while it has no open-access way.
 */
export async function checkOptionsOf(repos: Repositories, destination: string, data: string, topicWritten: boolean) {
  checkDestinationOptions(data, requeueOnProblem);
  const refusal = checkWis2Options(data);
  if (refusal !== null) throw invalid(refusal);
  const settings = topicWritten ? wis2Settings(data) : null;
  if (settings === null || 'invalid' in settings) return;
  const core = coreTopicRefusal(destination, settings.topic, await openAccessUsers(repos, destination));
  if (core !== null) throw invalid(core);
}

export async function listDestinationOptions(ports: Ports, destination: string): Promise<Record<string, string>> {
  const found = await ports.repos.destinations.get(destination);
  if (!found) throw notFound(`Destination ${destination} not found`);
  return Object.fromEntries([...readOptions(found.data)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Sets an option (`value`) or removes it (null), after the checks of checkOptionsOf on the text it leads
 * to, in one transaction with its audit row. Answers whether anything changed.
 */
export async function setDestinationOption(
  ports: Ports,
  actor: string,
  destination: string,
  name: string,
  value: string | null,
): Promise<boolean> {
  splitOptionName(name);
  return ports.repos.transaction(async (repos) => {
    const found = await repos.destinations.get(destination);
    if (!found) throw notFound(`Destination ${destination} not found`);
    const before = found.data;
    const data =
      value === null
        ? rewriteOptions(before, (e) => (e.name === name ? null : undefined))
        : setOption(before, name, value);
    if (data === before) return false;
    await checkOptionsOf(repos, destination, data, name === 'wis2.topic');
    await repos.destinations.setData(destination, data);
    await recordIn(repos, ports.clock(), {
      actor,
      action: value === null ? 'remove destination option' : 'set destination option',
      targetKind: 'destination',
      target: destination,
      detail: value === null ? name : `${name}=${value}`,
    });
    return true;
  });
}
