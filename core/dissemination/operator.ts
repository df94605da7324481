import { notFound } from '../common/errors.ts';
import { audited } from '../console/audit.ts';
import type { Ports } from '../ports.ts';

/** What an operator's action stores, as the reference does: a started destination waits for work. */
export const DESTINATION_ACTIONS = { start: 'WAIT', hold: 'HOLD', stop: 'STOP' } as const;
export type DestinationAction = keyof typeof DESTINATION_ACTIONS;

/**
 * Starts, holds or stops a destination: a new, restored or demo destination (INIT) sends nothing
 * until started. The change and its audit row are written in one transaction.
 */
export async function setDestinationStatus(ports: Ports, actor: string, name: string, action: DestinationAction) {
  const statusCode = DESTINATION_ACTIONS[action];
  await audited(
    ports,
    { actor, action: `${action} destination`, targetKind: 'destination', target: name },
    async (repos) => {
      if (!(await repos.destinations.setStatus(name, statusCode))) throw notFound(`Destination ${name} not found`);
      // A held or stopped destination sends nothing more: its running attempts end too.
      if (action !== 'start')
        await repos.transfers.interruptDestination(name, ports.clock(), `destination ${action} by ${actor}`);
    },
  );
  return statusCode;
}
