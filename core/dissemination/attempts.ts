import type { Ports } from '../ports.ts';
import { refreshShownStatus } from './destination-status.ts';
import {
  type Attempt,
  currentHost,
  decideOutcome,
  deliveredOutcome,
  type OutcomeDecision,
  type SendResult,
} from './outcome.ts';
import type { DueDestination } from './ports.ts';
import { rescheduleAfterRequeue } from './requeue-at-limit.ts';

/**
 * The host the next attempt of a due destination goes to; a started destination without any
 * dissemination host is set to FAIL (the reference's NoHosts), and null is answered.
 */
export async function hostOfNextAttempt(ports: Ports, destination: DueDestination) {
  const { host } = currentHost(destination, destination.state, ports.clock().getTime());
  if (host) return host;
  await ports.repos.dissemination.failDestination(destination.name);
  ports.logger.warn('destination has no dissemination host', { destination: destination.name });
  return null;
}

/**
 * Ends an attempt as `decideOutcome` says, in one transaction under the destination's ring lock:
 * the transfer's status with its history, the ring, and the destination's HOLD or shown status;
 * then its UPH or ERR line. Answers false when the mover no longer owned the attempt: its finish
 * wrote nothing but the attempt's release (an operator changed the transfer meanwhile), nothing
 * after it is written, and the transaction commits that release.
 */
export async function endAttempt(
  ports: Ports,
  attempt: Attempt,
  result: SendResult,
  random: () => number = Math.random,
): Promise<boolean> {
  if (result.kind === 'delivered') return endDelivered(ports, attempt, result);
  const now = ports.clock();
  const { destination, transfer } = attempt;
  let decided: OutcomeDecision | undefined;
  const owned = await ports.repos.transaction(async (repos) => {
    const stored = await repos.dissemination.lockFailover(destination.name);
    const decision = decideOutcome(attempt, result, stored, now, random);
    decided = decision;
    const ended = await repos.dissemination.finish({
      id: transfer.id,
      mover: attempt.mover,
      attempt: transfer.attempt,
      now,
      outcome: decision.transfer,
    });
    if (!ended) return false;
    await repos.dissemination.saveFailover(destination.name, decision.ring, { at: now, ...decision.ringNote });
    if (decision.holdDestination) await repos.dissemination.holdDestination(destination.name);
    else await refreshShownStatus(repos.dissemination, destination.name, now);
    return true;
  });
  if (owned && decided) {
    ports.events.write(decided.eventLine);
    if (decided.holdDestination) {
      ports.logger.warn('destination on HOLD: every host failed', { destination: destination.name });
    }
  }
  return owned;
}

/**
 * A delivered file's end, in one transaction: DONE with its history, the ring's success, the shown
 * status, and the requeued transfers' reschedule; then its UPH line. The ring is written without a
 * read before it, so that the ends of concurrent deliveries to one destination hold its row for as
 * short a time as they can; its lock is taken in the same order as a failure takes it (before the
 * destination's row), so the two never wait on each other in a cycle.
 */
async function endDelivered(ports: Ports, attempt: Attempt, result: Extract<SendResult, { kind: 'delivered' }>) {
  const now = ports.clock();
  const { destination, transfer } = attempt;
  const decided = deliveredOutcome(attempt, result, now);
  const owned = await ports.repos.transaction(async (repos) => {
    const ended = await repos.dissemination.finish({
      id: transfer.id,
      mover: attempt.mover,
      attempt: transfer.attempt,
      now,
      outcome: decided.transfer,
    });
    if (!ended) return false;
    await repos.dissemination.recordSuccess(destination.name, decided.success, {
      at: now,
      hostId: attempt.host.hostId,
    });
    await refreshShownStatus(repos.dissemination, destination.name, now);
    // Last: a claim that marks the destination holds its row, which the lines above may wait for.
    await rescheduleAfterRequeue(repos, destination.name, now);
    return true;
  });
  if (owned) ports.events.write(decided.eventLine);
  return owned;
}
