import type { Ports } from '../ports.ts';
import { attemptKeyOf } from './claims.ts';
import { refreshShownStatus, showStatuses } from './destination-status.ts';
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
  if (result.kind === 'delivered') return (await endDelivered(ports, [{ attempt, result }]))[0] ?? false;
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

/** A delivered file whose attempt is to end. */
export interface DeliveredAttempt {
  attempt: Attempt;
  result: Extract<SendResult, { kind: 'delivered' }>;
}

/**
 * Delivered files' ends, in one transaction: DONE with their history and their rings' success in
 * one statement (no read of a ring before it is written), the destinations' shown statuses, and
 * their requeued transfers' reschedule; then each UPH line. A ring's lock is taken in the same
 * order as a failure takes it (before the destination's row), so the two never wait on each other
 * in a cycle, and ends of several destinations take theirs in name order. Answers, for each in
 * order, whether its mover still owned the attempt (an attempt it no longer owned is only released).
 */
export async function endDelivered(ports: Ports, delivered: readonly DeliveredAttempt[]): Promise<boolean[]> {
  const now = ports.clock();
  const decided = delivered.map(({ attempt, result }) => deliveredOutcome(attempt, result, now));
  const ended = await ports.repos.transaction(async (repos) => {
    const ends = delivered.map(({ attempt }, i) => {
      const { transfer, success } = decided[i]!;
      return {
        id: attempt.transfer.id,
        attempt: attempt.transfer.attempt,
        mover: attempt.mover,
        sent: transfer.sent,
        md5: transfer.md5,
        comment: transfer.comment,
        filter: transfer.filter,
        success,
      };
    });
    const keys = new Set((await repos.dissemination.finishDelivered({ now, ends })).map(attemptKeyOf));
    const destinations = [
      ...new Set(
        delivered.filter((d) => keys.has(attemptKeyOf(d.attempt.transfer))).map((d) => d.attempt.destination.name),
      ),
    ].sort();
    if (destinations.length === 0) return keys;
    const views = await repos.dissemination.schedulerViews(destinations, now);
    await showStatuses(repos.dissemination, views, now);
    // Last: a claim that marks a destination holds its row, which the lines above may wait for.
    const requeued = [...views].filter(([, view]) => view.requeued).map(([name]) => name);
    if (requeued.length > 0) await rescheduleAfterRequeue(repos, requeued, now);
    return keys;
  });
  return delivered.map(({ attempt }, i) => {
    const owned = ended.has(attemptKeyOf(attempt.transfer));
    if (owned) ports.events.write(decided[i]!.eventLine);
    return owned;
  });
}
