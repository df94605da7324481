import { describe, expect, it } from 'vitest';
import { formatDate } from '../../core/acquisition/dates.ts';
import { InvalidListingLine, lineOption, readListingLines } from '../../core/acquisition/listing-lines.ts';

/** An Acquisition host's Directory field, read as the reference reads it. */
const now = new Date('2026-03-09T05:07:08Z');
const none = new Map<string, string>();
const read = (field: string, host = none, tokens = {}) => readListingLines(field, host, tokens, now);

describe('listing lines', () => {
  it('one listing per line: comments and blank lines skipped, the name pattern a whole match', () => {
    const lines = read('# the feed\n\n/data/feed/{.*\\.grib2}\n  /data/other/  \n');
    expect(lines.map((l) => [l.directory, l.namePattern?.source ?? null])).toEqual([
      ['/data/feed/', '^(?:.*\\.grib2)$'],
      ['/data/other/', null],
    ]);
    const [feed] = lines;
    expect(feed!.namePattern!.test('a.grib2')).toBe(true);
    expect(feed!.namePattern!.test('a.grib2.tmp')).toBe(false);
  });

  it('reads the [options] block, separated by ; or ,, values keeping their own = and <', () => {
    const [line] = read('[filesize=>=1000;fileage=<<24h,acquisition.useSymlink=yes]/in/');
    expect([...line!.options]).toEqual([
      ['filesize', '>=1000'],
      ['fileage', '<<24h'],
      ['useSymlink', 'yes'],
    ]);
    const host = new Map([
      ['acquisition.fileage', '<<1h'],
      ['acquisition.priority', '10'],
    ]);
    expect(lineOption(line!, host, 'fileage')).toBe('<<24h');
    expect(lineOption(line!, host, 'priority')).toBe('10');
  });

  it('a name pattern with quantifiers and escaped braces', () => {
    const [line] = read('/in/{\\d{8}_\\{x\\}\\.nc}');
    expect(line!.directory).toBe('/in/');
    expect(line!.namePattern!.test('20260309_{x}.nc')).toBe(true);
  });

  it('$date in the host format and delta, $date[…] with its own, $dirdate with the line options', () => {
    const host = new Map([
      ['acquisition.dateformat', 'yyyy/MM/dd'],
      ['acquisition.datedelta', '-1d'],
    ]);
    expect(read('/a/$date/', host)[0]!.directory).toBe('/a/2026/03/08/');
    expect(read('/a/$date[dateformat=yyyyMMddHH,datedelta=PT6H]/', host)[0]!.directory).toBe('/a/2026030911/');
    expect(read('[dateformat=yyDDD]/a/$dirdate/', host)[0]!.directory).toBe('/a/26067/');
    expect(read('/a/$date/')[0]!.directory).toBe('/a/20260309/');
  });

  it('host tokens from what the host gives, never one it does not', () => {
    const tokens = { 'host[login]': 'partner', 'transferMethod[name]': 'sftp' };
    expect(read('/home/$host[login]/$transferMethod[name]/', none, tokens)[0]!.directory).toBe('/home/partner/sftp/');
    expect(() => read('/x/$host[passwd]/', none, tokens)).toThrow('unknown token $host[passwd]');
  });

  it.each([
    ['$(js: "x")', 'Directory scripts'],
    ['/in/{[}', 'Directory line 1 (/in/{[}): invalid name pattern'],
    ['[filesize]/in/', 'option filesize is not name=value'],
    ['[a=b/in/', '[ without ]'],
    ['/ok/\n/a/$date[dateformat=yyyyQQ]/', 'Directory line 2'],
    ['/a/$date[datedelta=yesterday]/', 'Invalid datedelta yesterday'],
    ['[filesize=1]{x}', 'no directory'],
  ])('refuses %s with a reason', (field, message) => {
    expect(() => read(field)).toThrow(InvalidListingLine);
    expect(() => read(field)).toThrow(message);
  });

  it('formats the date fields and quoted text', () => {
    expect(formatDate(now, "yyyy-MM-dd'T'HH:mm:ss 'o''clock' DDD yy")).toBe("2026-03-09T05:07:08 o'clock 068 26");
  });
});
