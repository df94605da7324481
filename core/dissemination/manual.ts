import { invalid, notFound } from '../common/errors.ts';
import { audited } from '../console/audit.ts';
import type { Ports } from '../ports.ts';

/** What an operator's action stores: a requeue is stored as RETR, as the reference does with a manual WAIT. */
export const TRANSFER_ACTIONS = { requeue: 'RETR', hold: 'HOLD', stop: 'STOP' } as const;
export type TransferAction = keyof typeof TRANSFER_ACTIONS;

/** Why the reference refuses a manual change, or null when it allows it. */
export function manualChangeRefusal(
  transfer: { status: string; deleted: boolean; expired: boolean },
  action: TransferAction,
): string | null {
  const target = TRANSFER_ACTIONS[action];
  if ((transfer.deleted || transfer.expired) && target !== 'STOP') {
    return `Transfer is ${transfer.deleted ? 'deleted' : 'expired'}: it can only be stopped`;
  }
  if (transfer.status === target) return `Transfer is already ${target}`;
  if (action === 'requeue' && ['WAIT', 'EXEC', 'RETR', 'SCHE', 'FETC'].includes(transfer.status)) {
    return `Transfer in ${transfer.status} cannot be requeued`;
  }
  if (action === 'stop' && transfer.status === 'DONE') return 'Transfer in DONE cannot be stopped';
  return null;
}

/**
 * Requeues, holds or stops one transfer. The change, its history row and its audit row are
 * written in one transaction, and only if the transfer is still in the status it was judged in.
 */
export async function changeTransfer(ports: Ports, actor: string, id: number, action: TransferAction) {
  const now = ports.clock();
  const target = TRANSFER_ACTIONS[action];
  const change = { actor, action: `${action} transfer`, targetKind: 'transfer', target: String(id) };
  return audited(ports, change, async (repos) => {
    const transfer = await repos.transfers.forChange(id);
    if (!transfer) throw notFound(`Transfer ${id} not found`);
    const expired = transfer.expiresAt.getTime() < now.getTime();
    const refusal = manualChangeRefusal({ ...transfer, expired }, action);
    if (refusal) throw invalid(refusal);
    const outcome = await repos.transfers.changeStatus(id, transfer.status, target, now, `${action} by ${actor}`);
    if (outcome === 'key taken') throw invalid('Another live transfer holds the same target and unique name');
    if (outcome === 'changed meanwhile') throw invalid(`Transfer ${id} changed meanwhile; try again`);
    return target;
  });
}
