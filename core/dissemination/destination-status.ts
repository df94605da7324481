/**
 * The status a destination shows (the `statusCode` of the destination endpoints): what the
 * operator stored (INIT until started, HOLD, STOP, FAIL) or, for a started destination, what the
 * scheduler is doing with it now, as the reference computes it for its display.
 */
export type StoredDestinationStatus = 'INIT' | 'WAIT' | 'EXEC' | 'HOLD' | 'STOP' | 'FAIL';

export interface SchedulerView {
  /** Transfers of the destination being sent now. */
  running: number;
  /** Transfers whose queue time has come (WAIT, RETR or INTR), not being sent. */
  due: number;
  /** Transfers waiting out a retry of a failed attempt (RETR with a queue time still ahead). */
  retrying: number;
  /** Until when the destination sleeps after a round of every host failed. */
  sleepingUntil: number | null;
  /** The transfer being sent is the last one that failed (the reference shows "Resending"). */
  resendingLastFailure: boolean;
}

export function shownDestinationStatus(stored: StoredDestinationStatus, view: SchedulerView, now: number): string {
  if (stored !== 'WAIT' && stored !== 'EXEC') return stored;
  if (view.running > 0) return view.resendingLastFailure ? 'DONE' : 'EXEC';
  if (view.sleepingUntil !== null && view.sleepingUntil > now) return 'IDLE';
  if (view.retrying > 0) return 'RETR';
  if (view.due > 0) return 'SCHE';
  return 'WAIT';
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
