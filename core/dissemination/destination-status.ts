import type { DisseminationRepo, SchedulerView, ShownStatusView } from './ports.ts';

/**
 * The scheduler's status of a started destination, as the reference computes it for its display
 * (`getDestinationStatusCode`): sending (EXEC, or DONE while resending a failed transfer), sleeping
 * after a round of every host failed (IDLE), waiting out a host's retry frequency (RETR), with due
 * transfers (SCHE), or nothing to do (WAIT).
 */
export function schedulerStatus(view: SchedulerView, now: Date): 'EXEC' | 'DONE' | 'IDLE' | 'RETR' | 'SCHE' | 'WAIT' {
  if (view.sending) return view.resending ? 'DONE' : 'EXEC';
  if (view.pausedUntil !== null && view.pausedUntil > now) return view.pauseReason === 'sleep' ? 'IDLE' : 'RETR';
  if (view.due) return 'SCHE';
  return 'WAIT';
}

/** Stores the scheduler's status of a started destination when it changed: the one place it is decided. */
export async function refreshShownStatus(dissemination: DisseminationRepo, destination: string, now: Date) {
  await showStatuses(dissemination, await dissemination.schedulerViews([destination], now), now);
}

/** How many times a status is decided again when the destination changed between its read and its write. */
const MOST_DECISIONS = 5;

/**
 * Stores the statuses decided from `views` that changed, in name order. Each is written only while
 * the destination's row is the one read: a claim that committed meanwhile wrote it (showClaimed),
 * and a status decided before that claim's transfers were seen would hide them; it is read again.
 * Ends take the ring's lock before they read, so they never pass each other this way.
 */
export async function showStatuses(dissemination: DisseminationRepo, views: Map<string, ShownStatusView>, now: Date) {
  let pending = views;
  for (let decision = 0; pending.size > 0 && decision < MOST_DECISIONS; decision++) {
    const changedMeanwhile: string[] = [];
    for (const name of [...pending.keys()].sort()) {
      const view = pending.get(name);
      if (!view) continue;
      const status = schedulerStatus(view, now);
      if (status === view.shown) continue;
      if (!(await dissemination.showSchedulerStatus(name, status, view.version))) changedMeanwhile.push(name);
    }
    pending = changedMeanwhile.length > 0 ? await dissemination.schedulerViews(changedMeanwhile, now) : new Map();
  }
}

/**
 * In a claim's transaction, which holds the destination's row, once it claimed transfers: its
 * status now that it sends, written even when unchanged, so that a status an end decided before
 * this claim committed is not stored over it (see showStatuses).
 */
export async function showClaimed(dissemination: DisseminationRepo, destination: string, now: Date) {
  const view = (await dissemination.schedulerViews([destination], now)).get(destination);
  if (view) await dissemination.showSchedulerStatus(destination, schedulerStatus(view, now));
}

/** The reference's words for each destination status (`StatusFactory.destinationMapping`). */
export const DESTINATION_STATUS_LABELS: Readonly<Record<string, string>> = {
  INIT: 'Initialized',
  EXEC: 'Running',
  SCHE: 'Waiting',
  FAIL: 'NoHosts',
  INTR: 'Interrupted',
  WAIT: 'Idle',
  DONE: 'Resending',
  RETR: 'Retrying',
  RSTR: 'Restarting',
  STOP: 'Stopped',
  HOLD: 'Failed',
  IDLE: 'Sleeping',
};
