import type { Repositories } from '../ports.ts';
import { decideStartLimit, type StartCounts, type StartLimits } from './start-limits.ts';

/** As many transfers at their start limit as the reference's scheduler holds in its queue at once. */
export const AT_LIMIT_BATCH = 20;

/**
 * In a claim's transaction, before anything is started: the due transfers of the destination at
 * their start limit (`due`, locked by the claim's count) are requeued with a delay, or failed at the requeue limit (decideStartLimit),
 * each with its history row; the destination remembers the requeue for its next DONE.
 */
export async function requeueAtStartLimit(
  repos: Repositories,
  destination: string,
  limits: StartLimits,
  due: ReadonlyArray<StartCounts & { id: number }>,
  now: Date,
) {
  let requeued = false;
  for (const transfer of due) {
    const decision = decideStartLimit(transfer, limits, now);
    if (!decision) continue;
    await repos.dissemination.applyStartLimit(transfer.id, decision, now);
    requeued ||= decision.status === 'RETR';
  }
  if (requeued) await repos.dissemination.markRequeued(destination, now);
}

/**
 * In a DONE's transaction: after a destination requeued a transfer at its start limit, a success
 * gives the transfers it delayed back their scheduled times (the reference's `_reSchedule`).
 */
export async function rescheduleAfterRequeue(repos: Repositories, destinations: readonly string[], now: Date) {
  let reset = 0;
  for (const destination of await repos.dissemination.takeRequeued(destinations)) {
    reset += await repos.dissemination.resetToScheduled(destination, now);
  }
  return reset;
}
