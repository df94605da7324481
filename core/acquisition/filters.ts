import { parseDuration } from '../data-files/schedule.ts';

/** `acquisition.filesize` and `acquisition.fileage`: an operator and a value, as the reference writes them. */
export interface Comparison {
  op: '==' | '!=' | '>>' | '<<' | '>=' | '<=';
  value: number;
  text: string;
}

export class InvalidFilter extends Error {}

const OPERATOR = /^\s*(==|!=|>>|<<|>=|<=|=|<|>)\s*(.+?)\s*$/;
const SIZE = /^(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)$/i;
const SIZE_UNITS: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** A single `<`, `>` or `=` means the same doubled, as the reference reads it. */
function comparison(option: string, text: string, value: (v: string) => number | null): Comparison {
  const m = OPERATOR.exec(text);
  if (!m) throw new InvalidFilter(`${option} ${text}: expected an operator (== != >> << >= <=) and a value`);
  if (/\$(size|age)\b/.test(text)) throw new InvalidFilter(`${option} ${text}: expressions are not supported`);
  const op = (m[1]!.length === 1 ? m[1]!.repeat(2) : m[1]) as Comparison['op'];
  const parsed = value(m[2]!);
  if (parsed === null) throw new InvalidFilter(`${option} ${text}: invalid value ${m[2]}`);
  return { op, value: parsed, text };
}

/** `filesize`: bytes, or with a unit of 1024 (`10K`, `1MB`, `2GiB`). */
export const parseSizeFilter = (text: string) =>
  comparison('filesize', text, (v) => {
    const m = SIZE.exec(v);
    if (!m) return null;
    const bytes = Number(m[1]) * SIZE_UNITS[m[2]!.charAt(0).toLowerCase()]!;
    return Number.isFinite(bytes) ? Math.round(bytes) : null;
  });

/** `fileage`: a duration (`30s`, `6h`, `2d`, `PT48H`; a bare number is hours). */
export const parseAgeFilter = (text: string) => comparison('fileage', text, parseDuration);

export function holds(c: Comparison, actual: number) {
  switch (c.op) {
    case '==':
      return actual === c.value;
    case '!=':
      return actual !== c.value;
    case '>>':
      return actual > c.value;
    case '<<':
      return actual < c.value;
    case '>=':
      return actual >= c.value;
    case '<=':
      return actual <= c.value;
  }
}
