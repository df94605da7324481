/** Durations and start times of data-file puts (wire-decisions §10). */
const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const SIMPLE = /^(\d{1,9})([smhdw]?)$/;
const ISO_DURATION = /^P(?!$)(?:(\d+)W)?(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;

/** The span of JavaScript dates (±100 000 000 days): a longer duration can never give a time. */
const MAX_DURATION_MS = 8.64e15;
const bounded = (ms: number) => (Number.isSafeInteger(ms) && ms <= MAX_DURATION_MS ? ms : null);

const valid = (date: Date) => (Number.isNaN(date.getTime()) ? null : date);

/** `<n><unit>` (a bare number is hours) or an ISO 8601 duration (weeks, days, hours, minutes, seconds). */
export function parseDuration(text: string): number | null {
  const simple = SIMPLE.exec(text);
  if (simple) return bounded(Number(simple[1]) * UNIT_MS[simple[2] || 'h']!);
  const iso = ISO_DURATION.exec(text);
  if (!iso) return null;
  const [w, d, h, m, s] = iso.slice(1).map((v) => Number(v ?? 0)) as [number, number, number, number, number];
  return bounded(w * UNIT_MS.w! + d * UNIT_MS.d! + h * UNIT_MS.h! + m * UNIT_MS.m! + s * UNIT_MS.s!);
}

const COMPACT = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** Date.UTC without its reading of the years 0 to 99 as 1900 to 1999. */
function utc(year: number, month: number, day: number, hours = 0, minutes = 0, seconds = 0): Date {
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  date.setUTCHours(hours, minutes, seconds, 0);
  return date;
}

/** ISO 8601, `yyyyMMddHHmmss` (UTC), or `+<n><unit>` relative to `now`. */
export function parseStart(text: string, now: Date): Date | null {
  if (text.startsWith('+')) {
    const ms = parseDuration(text.slice(1));
    return ms === null ? null : valid(new Date(now.getTime() + ms));
  }
  const compact = COMPACT.exec(text);
  if (compact) {
    const [y, mo, d, h, mi, s] = compact.slice(1).map(Number) as [number, number, number, number, number, number];
    const date = utc(y, mo - 1, d, h, mi, s);
    return date.getUTCMonth() === mo - 1 && date.getUTCDate() === d && h < 24 && mi < 60 && s < 60 ? date : null;
  }
  const iso = ISO_DATE.exec(text);
  if (!iso) return null;
  // The parser rolls 2030-02-30 over into March and may take 24:00: check the fields first, like the compact form.
  const [y, mo, d, h = 0, mi = 0, s = 0] = iso
    .slice(1)
    .map((v) => (v === undefined ? undefined : Number(v))) as number[];
  const day = utc(y!, mo! - 1, d!);
  if (day.getUTCMonth() !== mo! - 1 || day.getUTCDate() !== d || h >= 24 || mi >= 60 || s >= 60) return null;
  // A date-time without an offset is read as UTC, like the compact form.
  const withZone =
    /[T ]\d{2}:\d{2}/.test(text) && !/(Z|[+-]\d{2}:?\d{2})$/.test(text) ? `${text.replace(' ', 'T')}Z` : text;
  return valid(new Date(withZone));
}

/**
 * A time the database and every reader of ISO 8601 take: years 1 to 9999. Later years need
 * an expanded form (+010000-...) and Postgres has no year 0.
 */
export function storable(date: Date): boolean {
  const year = date.getUTCFullYear();
  return year >= 1 && year <= 9999;
}

export const DURATION_EXPECTED = '<n> with unit s, m, h, d or w, or an ISO 8601 duration expected';
export const START_EXPECTED = 'ISO 8601 date-time, yyyyMMddHHmmss or +<n><unit> expected';
