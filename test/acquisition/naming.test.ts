import { describe, expect, it } from 'vitest';
import { readListingLines } from '../../core/acquisition/listing-lines.ts';
import { nameOf } from '../../core/acquisition/naming.ts';
import type { ListedEntry } from '../../core/acquisition/selection.ts';

/** What an acquired file is registered as, and the key it is recognised by when listed again. */
const now = new Date('2026-03-09T12:00:00Z');
const entry: ListedEntry = { name: 'a.grib2', type: 'file', size: 10, time: new Date('2026-03-09T10:20:30.456Z') };
const named = (line: string, host: Array<[string, string]> = []) => {
  const options = new Map(host);
  const [read] = readListingLines(line, options, { 'host[nickname]': 'partner' }, now);
  return nameOf(entry, read!, options, { destination: 'ACQ', tokens: { 'host[nickname]': 'partner' }, now });
};

describe('acquired names', () => {
  it('by default: the entry name as target, the original path as unique name', () => {
    expect(named('/in/feed/')).toEqual({
      original: '/in/feed/a.grib2',
      target: 'a.grib2',
      uniqueName: '/in/feed/a.grib2',
    });
  });

  it('a target template with the entry, destination, time, date and host tokens', () => {
    const { target } = named('[target=$destination/$host[nickname]/$date/$timestamp-$name]/in')!;
    expect(target).toBe(`ACQ/partner/20260309/${Date.parse('2026-03-09T10:20:30Z')}-a.grib2`);
  });

  it('unique names: by target only, by the initial target, with the time', () => {
    expect(named('[uniqueByTargetOnly=yes]/in/').uniqueName).toBe('');
    expect(named('/in/', [['acquisition.useTargetAsUniqueName', 'yes']]).uniqueName).toBe('a.grib2');
    expect(named('[uniqueByNameAndTime=yes]/in/').uniqueName).toBe(`/in/a.grib2.${Date.parse('2026-03-09T10:20:30Z')}`);
  });
});
