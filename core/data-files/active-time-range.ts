/**
 * `scheduler.activeTimeRange`: comma separated `HH:mm-HH:mm` (or `HH:mm:ss`) ranges of the day, in
 * UTC, outside which the destination starts no transfer. As in the reference, a time is inside a
 * range strictly after its start and strictly before its end; a range never spans midnight.
 */
/** Milliseconds into the day. */
export interface TimeRange {
  start: number;
  end: number;
}

const TIME = /^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$/;
export const TIME_RANGE_EXPECTED = 'HH:mm-HH:mm ranges, comma separated, e.g. 06:00-18:00,20:00-22:00';

function msOfDay(text: string): number | null {
  const m = TIME.exec(text.trim());
  return m ? (Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3] ?? 0)) * 1000 : null;
}

/** The ranges of the option's text, or null when one of them is not a range. */
export function parseTimeRanges(text: string): TimeRange[] | null {
  const ranges: TimeRange[] = [];
  for (const item of text.split(',')) {
    if (item.trim() === '') continue;
    const parts = item.split('-');
    if (parts.length !== 2) return null;
    const start = msOfDay(parts[0]!);
    const end = msOfDay(parts[1]!);
    if (start === null || end === null) return null;
    ranges.push({ start, end });
  }
  return ranges;
}

/** Whether a destination with this option may start a transfer at `now`: no option (or none valid) never closes it. */
export function insideActiveTimeRange(text: string | undefined, now: Date): boolean {
  if (text === undefined || text.trim() === '') return true;
  const ranges = parseTimeRanges(text);
  if (ranges === null || ranges.length === 0) return true;
  const ms = now.getTime() - Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return ranges.some((r) => ms > r.start && ms < r.end);
}
