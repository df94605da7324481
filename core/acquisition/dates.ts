import { parseDuration } from '../data-files/schedule.ts';

/**
 * The date patterns of listing lines, written as the reference writes them (Java's SimpleDateFormat):
 * `yyyy`, `yy`, `MM`, `dd`, `DDD` (day of the year), `HH`, `mm`, `ss`, and text in single quotes.
 * Dates are formatted in UTC.
 */
const FIELDS: Record<string, (d: Date) => string> = {
  yyyy: (d) => String(d.getUTCFullYear()).padStart(4, '0'),
  yy: (d) => String(d.getUTCFullYear() % 100).padStart(2, '0'),
  MM: (d) => String(d.getUTCMonth() + 1).padStart(2, '0'),
  dd: (d) => String(d.getUTCDate()).padStart(2, '0'),
  DDD: (d) => String(dayOfYear(d)).padStart(3, '0'),
  HH: (d) => String(d.getUTCHours()).padStart(2, '0'),
  mm: (d) => String(d.getUTCMinutes()).padStart(2, '0'),
  ss: (d) => String(d.getUTCSeconds()).padStart(2, '0'),
};
const FIELD = new RegExp(`^(?:${Object.keys(FIELDS).join('|')})`);

const dayOfYear = (d: Date) => Math.floor((d.getTime() - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000) + 1;

export class InvalidDatePattern extends Error {}

/** Formats `date` with a pattern; a letter that names no field is refused, as it would mean nothing here. */
export function formatDate(date: Date, pattern: string): string {
  let out = '';
  for (let i = 0; i < pattern.length; ) {
    const c = pattern[i]!;
    if (c === "'") {
      const quoted = readQuoted(pattern, i);
      out += quoted.text;
      i = quoted.next;
      continue;
    }
    const field = FIELD.exec(pattern.slice(i))?.[0];
    if (field) {
      out += FIELDS[field]!(date);
      i += field.length;
    } else if (/[a-zA-Z]/.test(c)) {
      throw new InvalidDatePattern(`Unknown field ${c} in date pattern ${pattern} (${Object.keys(FIELDS).join(', ')})`);
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Text in single quotes from `at`; `''` is a quote, inside quotes or out. */
function readQuoted(pattern: string, at: number) {
  if (pattern[at + 1] === "'") return { text: "'", next: at + 2 };
  let text = '';
  for (let i = at + 1; i < pattern.length; i++) {
    if (pattern[i] !== "'") text += pattern[i];
    else if (pattern[i + 1] === "'") text += pattern[i++];
    else return { text, next: i + 1 };
  }
  throw new InvalidDatePattern(`Unterminated quote in date pattern ${pattern}`);
}

/** `datedelta`: a duration (`1d`, `6h`, `PT30M`), negative with a leading `-`. */
export function parseDateDelta(text: string): number {
  const negative = text.startsWith('-');
  const ms = parseDuration(text.replace(/^[-+]/, ''));
  if (ms === null) throw new InvalidDatePattern(`Invalid datedelta ${text} (a duration such as -1d, 6h or PT30M)`);
  return negative ? -ms : ms;
}
