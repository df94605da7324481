import { invalid, notFound } from '../common/errors.ts';
import { audited } from '../console/audit.ts';
import type { Ports } from '../ports.ts';

/** The reference's range of a transfer's priority: lower is sent first. */
export const PRIORITY_MIN = 0;
export const PRIORITY_MAX = 99;

/** A priority as typed by an operator, or why it is refused (the reference's words for a value out of range). */
export function parsePriority(text: string): { priority: number } | { refusal: string } {
  const trimmed = text.trim();
  if (!/^[+-]?\d+$/.test(trimmed)) {
    return { refusal: `Priority must be a whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX}: '${text}'` };
  }
  const priority = Number(trimmed);
  if (priority < PRIORITY_MIN || priority > PRIORITY_MAX) {
    return { refusal: `Priority out of range (${PRIORITY_MIN}..${PRIORITY_MAX}): ${trimmed}` };
  }
  return { priority };
}

/**
 * Sets the priority of one transfer: its status stays, a history row says who changed it from what,
 * and the change and its audit row are written in one transaction. A deleted transfer keeps its own.
 */
export async function changePriority(ports: Ports, actor: string, id: number, text: string) {
  const parsed = parsePriority(text);
  if ('refusal' in parsed) throw invalid(parsed.refusal);
  const { priority } = parsed;
  const change = {
    actor,
    action: 'change transfer priority',
    targetKind: 'transfer',
    target: String(id),
    detail: `priority ${priority}`,
  };
  return audited(ports, change, async (repos) => {
    const transfer = await repos.transfers.forChange(id);
    if (!transfer) throw notFound(`Transfer ${id} not found`);
    if (transfer.deleted) throw invalid(`Transfer ${id} is deleted: its priority cannot be changed`);
    if (transfer.priority === priority) throw invalid(`Transfer ${id} already has priority ${priority}`);
    const comment = `Priority changed from ${transfer.priority} to ${priority} by ${actor}`;
    await repos.transfers.setPriority(id, priority, ports.clock(), comment);
    return { from: transfer.priority, to: priority };
  });
}
