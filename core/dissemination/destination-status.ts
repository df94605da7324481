import type { Repositories } from '../ports.ts';
import type { DisseminationRepo, SchedulerView } from './ports.ts';

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
export function refreshShownStatus(dissemination: DisseminationRepo, destination: string, now: Date) {
  return refreshShownStatuses(dissemination, [destination], now);
}

/** refreshShownStatus for several destinations, read in one statement and written in name order. */
export async function refreshShownStatuses(dissemination: DisseminationRepo, names: readonly string[], now: Date) {
  const views = await dissemination.schedulerViews(names, now);
  for (const name of [...views.keys()].sort()) {
    const view = views.get(name);
    if (!view) continue;
    const status = schedulerStatus(view, now);
    if (status !== view.shown) await dissemination.showSchedulerStatus(name, status);
  }
}

/**
 * refreshShownStatus in its own transaction under the destination's ring lock, which every attempt's
 * end holds while it decides: a view read before an attempt ended can't be stored after that end's.
 */
export async function refreshShownStatusLocked(repos: Repositories, destination: string, now: Date) {
  await repos.transaction(async (locked) => {
    await locked.dissemination.lockFailover(destination);
    await refreshShownStatus(locked.dissemination, destination, now);
  });
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
