import { describe, expect, it } from 'vitest';
import { deliveryExtras } from '../../core/dissemination/delivery-options.ts';
import { chooseFilter, deliveryFilter, filterOptions, readByteSize } from '../../core/dissemination/filters.ts';
import { methodOptions } from '../../core/dissemination/method-options.ts';

const all = (values: Record<string, string>) => new Map(Object.entries(values));

describe('the host filter, as the reference chooses it', () => {
  it('applies filterName to every file by default, and none without one', () => {
    const options = filterOptions(all({}));
    expect(chooseFilter('gzip', options, 'a.grib', 0)).toBe('gzip');
    expect(chooseFilter(null, options, 'a.grib', 10)).toBeNull();
    expect(chooseFilter('none', options, 'a.grib', 10)).toBeNull();
  });

  it('filters only names matching the whole ectrans.filterpattern, from ectrans.filterMinimumSize up', () => {
    const options = filterOptions(all({ 'ectrans.filterpattern': '.*\\.txt', 'ectrans.filterMinimumSize': '2k' }));
    expect(chooseFilter('gzip', options, 'a.txt', 2048)).toBe('gzip');
    expect(chooseFilter('gzip', options, 'a.txt', 2047)).toBeNull();
    expect(chooseFilter('gzip', options, 'a.txt.bin', 5000)).toBeNull();
  });

  it('reads size limits in filterName: gzip up to the limit, then the next filter', () => {
    const options = filterOptions(all({}));
    expect(chooseFilter('gzip:1000:zstd', options, 'f', 1000)).toBe('gzip');
    expect(chooseFilter('gzip:1000:zstd', options, 'f', 1001)).toBe('zstd');
    expect(chooseFilter('gzip:1000', options, 'f', 1001)).toBeNull();
    expect(() => chooseFilter('gzip:big', options, 'f', 1)).toThrow('Bad syntax for filter: gzip:big');
  });

  it('reads sizes as the options write them', () => {
    expect(readByteSize('1024', 0)).toBe(1024);
    expect(readByteSize('10 KB', 0)).toBe(10 * 1024);
    expect(readByteSize('2m', 0)).toBe(2 * 1024 * 1024);
    expect(readByteSize('lots', 7)).toBe(7);
  });

  it('filters S3, HTTP, Azure and WebDAV through a spool only, and refuses a filter it has no compressor for', () => {
    const options = filterOptions(all({}));
    const file = { source: '/d/a.txt', size: 10 };
    const gzip = { gzip: (source: AsyncIterable<Uint8Array>) => source };
    expect(deliveryFilter(gzip, 'sftp', { filterName: 'gzip' }, options, file)).toMatchObject({ spooled: false });
    for (const method of ['s3', 'http', 'azure', 'webdav', 'r2']) {
      expect(() => deliveryFilter(gzip, method, { filterName: 'gzip' }, options, file)).toThrow(
        `Filter gzip not supported with ${method} on this DataMover`,
      );
      expect(deliveryFilter(gzip, method, { filterName: 'gzip' }, options, file, true)).toMatchObject({
        name: 'gzip',
        spooled: true,
      });
    }
    for (const method of ['portal', 'test'])
      expect(deliveryFilter(gzip, method, { filterName: 'gzip' }, options, file)).toBeNull();
    expect(() => deliveryFilter({}, 'sftp', { filterName: 'zstd' }, options, file)).toThrow(
      'Filter zstd not supported',
    );
    expect(() => deliveryFilter({}, 'sftp', { filterName: 'brotli' }, options, file)).toThrow(
      'Filter brotli not supported',
    );
  });
});

describe('the options around the upload', () => {
  it('has no sidecar, no command and execCode 0 by default', () => {
    const extras = methodOptions('sftp', 'h', '').extras;
    expect(extras.sidecarExtension).toBeNull();
    expect(extras.execCommand('/x')).toBeNull();
    expect(extras.execCode).toBe(0);
    expect(extras.prePutCommands('/x')).toEqual([]);
  });

  it('replaces $filename and splits the FTP commands at ;', () => {
    const extras = deliveryExtras(
      all({ prePutCmd: 'SITE UMASK 022; MKD $filename.d ;', execCmd: 'touch $filename.ok', execCode: '2' }),
      false,
    );
    expect(extras.prePutCommands('in/f')).toEqual(['SITE UMASK 022', 'MKD in/f.d']);
    expect(extras.execCommand('in/f')).toBe('touch in/f.ok');
    expect(extras.execCode).toBe(2);
  });
});
