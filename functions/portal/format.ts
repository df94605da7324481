/** How the portal's pages write sizes and times: short for the eye, the exact value on hover. */

const UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** `512 B`, `1.5 KiB`, `12.0 MiB`: binary units, as the sizes people compare files by. */
export function shortBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${UNITS[unit]}`;
}

/** `1,572,864`: grouped by thousands (not by locale: the server has none). */
export const grouped = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** `1,572,864 bytes`: the exact size. */
export const exactBytes = (bytes: number) => `${grouped(bytes)} bytes`;

/** `1 file`, `12 files`, `1,000+ files` (more than the count): a folder's files. */
export const fileCount = (count: number, more = false) =>
  `${grouped(count)}${more ? '+' : ''} ${count === 1 && !more ? 'file' : 'files'}`;

/** A time as ISO 8601 in UTC, to the second (as Last-Modified has it). */
export const isoSeconds = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** `2026-11-28 15:41 UTC`: what a page shows before its script puts the time in the reader's own zone. */
export const utcMinutes = (date: Date) => `${isoSeconds(date).slice(0, 16).replace('T', ' ')} UTC`;

/** `2026-11-28 15:41:42 UTC`: the exact time, for the hover. */
export const utcSeconds = (date: Date) => `${isoSeconds(date).slice(0, 19).replace('T', ' ')} UTC`;
