/**
 * When a host is checked and what a check's result says: the reference's HostCheckScheduler, decided
 * here without I/O so that the runner, the console and the tests agree.
 */

/**
 * The reference checks a host when `checkFrequency` (ms) has passed since its last check began; its
 * scheduler wakes every 5 minutes, so a host whose frequency is 0 (the column's default) or unset is
 * checked every 5 minutes.
 */
export const DEFAULT_CHECK_FREQUENCY_MS = 5 * 60_000;

/** The reference's test phrase: the bytes written as `checkFilename`. */
export const CHECK_BYTES = new TextEncoder().encode('Test transfer file');

/** Results kept per host besides the latest, newest first (the console shows them). */
export const HISTORY_LENGTH = 10;

/** The time between two checks of a host, from its `checkFrequency`. */
export const checkIntervalMs = (checkFrequency: number | null | undefined) =>
  checkFrequency && checkFrequency > 0 ? checkFrequency : DEFAULT_CHECK_FREQUENCY_MS;

/** Whether a host checked last at `lastAt` (null: never) is due at `now`. */
export function isDue(lastAt: Date | null, checkFrequency: number | null | undefined, now: Date): boolean {
  return lastAt === null || now.getTime() - lastAt.getTime() >= checkIntervalMs(checkFrequency);
}

/** When the next check of a host is due: at once when it was never checked. */
export const nextCheckAt = (lastAt: Date | null, checkFrequency: number | null | undefined) =>
  lastAt === null ? null : new Date(lastAt.getTime() + checkIntervalMs(checkFrequency));

/** The file a check writes then removes: `checkFilename` when set (trimmed), else none. */
export function checkFileOf(checkFilename: string | null | undefined): string | null {
  const name = checkFilename?.trim() ?? '';
  return name === '' ? null : name;
}

/**
 * How long the lease of a check lasts: the check is cut at `timeoutMs`, and its end written after;
 * the margin covers that write, so that no other server takes the host while its check still runs.
 */
export const leaseMsFor = (timeoutMs: number) => timeoutMs * 2 + 10_000;

/** One check's result, as kept and shown. */
export interface CheckResult {
  at: Date;
  ok: boolean;
  durationMs: number;
  /** What was done, or why it failed; scrubbed of the host's secrets. */
  message: string;
}
