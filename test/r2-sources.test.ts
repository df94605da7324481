import { describe, expect, it } from 'vitest';
import { isR2Source, isWorkerSource, parseR2Source } from '../core/data-files/r2-sources.ts';

/** The rules of `r2://<binding>/<key>` sources, before any bucket is asked. */
const ALLOWED = ['SOURCES', 'ARCHIVE'];
const refusal = (source: string) => {
  try {
    parseR2Source(source, ALLOWED);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error(`${source} was accepted`);
};

describe('an R2 source', () => {
  it('names an allowed binding and the key after its slash, taken as written', () => {
    expect(parseR2Source('r2://SOURCES/fc/2030/fc.grib', ALLOWED)).toEqual({
      binding: 'SOURCES',
      key: 'fc/2030/fc.grib',
    });
    // No percent-decoding: R2 keys may hold '%'; '..' and '//' are characters of a key, no path steps.
    expect(parseR2Source('r2://ARCHIVE/a%20b/../c//d?x#y', ALLOWED)).toEqual({
      binding: 'ARCHIVE',
      key: 'a%20b/../c//d?x#y',
    });
    expect(parseR2Source('R2://SOURCES/ünïcode key.bin', ALLOWED).key).toBe('ünïcode key.bin');
    expect(parseR2Source(`r2://SOURCES/${'é'.repeat(512)}`, ALLOWED).key).toHaveLength(512);
  });

  it('is refused with the reason when its binding is not allowed or not a binding name', () => {
    expect(refusal('r2://OTHER/fc.grib')).toBe(
      'Source r2://OTHER/fc.grib not allowed: OTHER is not an allowed source bucket',
    );
    // Binding names are matched as written, as `env.<binding>` is.
    expect(refusal('r2://sources/fc.grib')).toBe(
      'Source r2://sources/fc.grib not allowed: sources is not an allowed source bucket',
    );
    expect(parseR2Source.bind(null, 'r2://SOURCES/k', [])).toThrow('SOURCES is not an allowed source bucket');
    expect(refusal('r2://my-bucket/fc.grib')).toBe(
      "Source r2://my-bucket/fc.grib is not a valid R2 source: 'my-bucket' is not a binding name",
    );
    expect(refusal('r2:///fc.grib')).toBe("Source r2:///fc.grib is not a valid R2 source: '' is not a binding name");
  });

  it('is refused with the reason when its key is missing, empty, too long or holds a control character', () => {
    expect(refusal('r2://SOURCES')).toBe('Source r2://SOURCES is not a valid R2 source: r2://<binding>/<key> expected');
    expect(refusal('r2://SOURCES/')).toBe('Source r2://SOURCES/ is not a valid R2 source: its key is empty');
    expect(refusal('r2://SOURCES//fc.grib')).toBe(
      "Source r2://SOURCES//fc.grib is not a valid R2 source: a key without a leading '/' expected",
    );
    expect(refusal(`r2://SOURCES/${'é'.repeat(513)}`)).toMatch(/its key is longer than 1024 bytes$/);
    // Shown escaped: a message (and a log line) never carries the control character itself.
    expect(refusal('r2://SOURCES/a\nb')).toBe(
      'Source r2://SOURCES/a\\x0ab not allowed: its key holds a control character',
    );
    expect(refusal('r2://SOURCES/a\u0000b')).toMatch(/a\\x00b not allowed: its key holds a control character$/);
    expect(refusal('r2://SOURCES/a\u009bb')).toMatch(/a\\x9bb not allowed: its key holds a control character$/);
    expect(refusal('r2://SOURCES/a\u007f')).toMatch(/a\\x7f not allowed/);
  });

  it('is a source a Worker reads, as http(s) URLs are, and neither local paths nor other schemes', () => {
    const worker = ['r2://SOURCES/k', 'R2://SOURCES/k', 'https://h/f', 'HTTP://h/f'];
    const notWorker = ['/data/fc.grib', 'file:///data/fc.grib', 'ftp://h/f', 's3://b/k', 'r2:/SOURCES/k', 'xr2://S/k'];
    for (const source of worker) expect(isWorkerSource(source), source).toBe(true);
    for (const source of notWorker) expect(isWorkerSource(source), source).toBe(false);
    expect(worker.map(isR2Source)).toEqual([true, true, false, false]);
  });
});
