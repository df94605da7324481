import { describe, expect, it } from 'vitest';
import { InvalidFilter, parseAgeFilter, parseSizeFilter } from '../../core/acquisition/filters.ts';
import { readListingLines, replaceTokens } from '../../core/acquisition/listing-lines.ts';
import { judge, type ListedEntry, rulesOf } from '../../core/acquisition/selection.ts';

/** Which listed entries an acquisition takes, and why it leaves the others. */
const now = new Date('2026-03-09T12:00:00Z');
const ago = (ms: number) => new Date(now.getTime() - ms);
const HOUR = 3_600_000;
const file = (name: string, size: number | null = 100, time: Date | null = ago(HOUR)): ListedEntry => ({
  name,
  type: 'file',
  size,
  time,
});
const rules = (line: string, host: Array<[string, string]> = []) => {
  const options = new Map(host);
  const read = readListingLines(line, options, {}, now)[0]!;
  return rulesOf(read, options, (text) => replaceTokens(text, { host: options, line: read.options, tokens: {}, now }));
};
const outcome = (entry: ListedEntry, line: string, host: Array<[string, string]> = []) =>
  judge(entry, rules(line, host), now);

describe('filters', () => {
  it.each([
    ['>>1000', '>>', 1000],
    ['>1000', '>>', 1000],
    ['<= 10K', '<=', 10_240],
    ['==1MB', '==', 1_048_576],
    ['!=2GiB', '!=', 2 * 1024 ** 3],
    ['=0', '==', 0],
  ])('filesize %s', (text, op, value) => {
    expect(parseSizeFilter(text)).toMatchObject({ op, value });
  });

  it.each([
    ['<<24h', '<<', 24 * HOUR],
    ['<3d', '<<', 72 * HOUR],
    ['>=PT30M', '>=', 1_800_000],
    ['>>6', '>>', 6 * HOUR],
  ])('fileage %s', (text, op, value) => {
    expect(parseAgeFilter(text)).toMatchObject({ op, value });
  });

  it.each([
    ['1000', 'expected an operator'],
    ['>>lots', 'invalid value lots'],
    ['>>$size * 2', 'expressions are not supported'],
  ])('refuses filesize %s', (text, message) => {
    expect(() => parseSizeFilter(text)).toThrow(InvalidFilter);
    expect(() => parseSizeFilter(text)).toThrow(message);
  });
});

describe('entries', () => {
  it('takes a file matching every rule', () => {
    expect(outcome(file('a.grib2', 5000), '[filesize=>>1000;fileage=<<2h]/in/{.*\\.grib2}')).toEqual({
      selected: true,
    });
  });

  it('leaves directories and other entries, and links unless useSymlink', () => {
    const link: ListedEntry = { ...file('l.grib2'), type: 'symlink' };
    expect(outcome({ ...file('d'), type: 'directory' }, '/in/')).toEqual({ selected: false, reason: 'a directory' });
    expect(outcome({ ...file('p'), type: 'other' }, '/in/')).toMatchObject({ selected: false });
    expect(outcome(link, '/in/')).toEqual({ selected: false, reason: 'a symbolic link (useSymlink is off)' });
    expect(outcome(link, '/in/', [['acquisition.useSymlink', 'yes']])).toEqual({ selected: true });
    // A link's listed size is the link's own: filesize does not apply to it.
    expect(outcome({ ...link, size: 10 }, '[useSymlink=yes;filesize=>>1000]/in/')).toEqual({ selected: true });
  });

  it('wildcardFilter takes whole names as a shell would; regexPattern a match anywhere, its tokens replaced', () => {
    const wild: Array<[string, string]> = [['acquisition.wildcardFilter', 'obs_??.b*']];
    expect(outcome(file('obs_01.bufr'), '/in/', wild)).toEqual({ selected: true });
    expect(outcome(file('obs_1.bufr'), '/in/', wild)).toEqual({
      selected: false,
      reason: 'name not matching wildcardFilter obs_??.b*',
    });
    // Dots and other regular expression characters are themselves.
    expect(outcome(file('obs_01xbufr'), '[wildcardFilter=obs_01.bufr]/in/')).toMatchObject({ selected: false });
    expect(outcome(file('a.grib'), '[regexPattern=\\.grib$]/in/')).toEqual({ selected: true });
    expect(outcome(file('a.grib.tmp'), '[regexPattern=\\.grib$]/in/')).toEqual({
      selected: false,
      reason: 'name not matching regexPattern \\.grib$',
    });
    // $date as in the directory (dateformat yyyyMMdd); $namePattern the line's {regex}.
    const dated: Array<[string, string]> = [['acquisition.regexPattern', '_$date_($namePattern)']];
    expect(outcome(file('x_20260309_a1.grib'), '/in/{.*a\\d.*}', dated)).toEqual({ selected: true });
    expect(outcome(file('x_20260308_a1.grib'), '/in/{.*a\\d.*}', dated)).toEqual({
      selected: false,
      reason: 'name not matching regexPattern _20260309_(.*a\\d.*)',
    });
    expect(() => rules('/in/', [['acquisition.regexPattern', '(']])).toThrow(InvalidFilter);
  });

  it('names, sizes and ages that fail say so', () => {
    expect(outcome(file('a.txt'), '/in/{.*\\.grib2}')).toEqual({
      selected: false,
      reason: 'name not matching {.*\\.grib2}',
    });
    expect(outcome(file('a', 10), '[filesize=>>1000]/in/')).toEqual({
      selected: false,
      reason: 'wrong size: 10 bytes (filesize >>1000)',
    });
    // Not yet old enough: the file may still be being written at the host.
    expect(outcome(file('a', 10, ago(60_000)), '[fileage=>=5m]/in/')).toEqual({
      selected: false,
      reason: 'wrong age: 60 s (fileage >=5m)',
    });
  });

  it('a file of unknown time passes fileage, and is left only under onlyValidTime', () => {
    expect(outcome(file('a', 10, null), '[fileage=<<1h]/in/')).toEqual({ selected: true });
    expect(outcome(file('a', 10, null), '[onlyValidTime=yes]/in/')).toEqual({
      selected: false,
      reason: 'no valid time (onlyValidTime is on)',
    });
  });

  it('refuses a flag that is neither yes nor no', () => {
    expect(() => rules('[useSymlink=maybe]/in/')).toThrow('useSymlink maybe: expected yes or no');
  });
});
