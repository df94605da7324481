/**
 * The time of the data a file holds, from its put's metadata, for a WIS2 message's `datetime`: `datetime` (ISO
 * 8601, with its zone or in UTC), or `date` (yyyyMMdd) with `time` (HH, HHmm or HH:mm; 00 when absent) in UTC, as
 * the reference's products give them. Null when the metadata gives none, or one that is no time.
 */
export function dataTimeOf(metadata: ReadonlyArray<readonly [string, string]>): Date | null {
  const value = (key: string) => metadata.find(([k]) => k.toLowerCase() === key)?.[1]?.trim();
  const datetime = value('datetime');
  if (datetime) {
    const zoned = /(Z|[+-]\d\d:?\d\d)$/i.test(datetime) ? datetime : `${datetime}Z`;
    const at = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?/.test(datetime) ? new Date(zoned) : null;
    return at && !Number.isNaN(at.getTime()) ? at : null;
  }
  const date = /^(\d{4})(\d\d)(\d\d)$/.exec(value('date') ?? '');
  if (!date) return null;
  const time = /^(\d\d):?(\d\d)?$/.exec(value('time') ?? '00');
  if (!time) return null;
  const [, y, mo, d] = date.map(Number) as [number, number, number, number];
  const [h, mi] = [Number(time[1]), Number(time[2] ?? 0)];
  const at = new Date(Date.UTC(y, mo - 1, d, h, mi));
  // 20261332 or 25:00 would roll over into another day: such a value is no time.
  const same = at.getUTCMonth() === mo - 1 && at.getUTCDate() === d && at.getUTCHours() === h && mi < 60;
  return same ? at : null;
}
