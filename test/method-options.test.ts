import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { methodOptions, readDuration, readFlag, splitHostPort } from '../core/dissemination/method-options.ts';
import { END_OF_PROPERTIES, readOptions, setOption } from '../core/hosts/options.ts';

describe('reading host options', () => {
  it('reads back every value setOption writes, whatever it holds', () => {
    const name = fc.constantFrom('sftp.port', 'ftp.passive', 's3.bucketName', 'ectrans.putTimeOut', 'http.scheme');
    fc.assert(
      fc.property(fc.dictionary(name, fc.string({ unit: 'grapheme' })), fc.string(), (values, script) => {
        let data = script === '' ? '' : `${END_OF_PROPERTIES}\n${script}`;
        for (const [n, v] of Object.entries(values)) data = setOption(data, n, v);
        expect(Object.fromEntries(readOptions(data))).toEqual(values);
      }),
    );
  });

  it('reads the reference layout: values over several lines, spaces in names, nothing after the marker', () => {
    const data = [
      'ftp.passive = "yes"',
      'sftp .port="2222"',
      'test.comment = "first line',
      'second line"',
      'nodot = "x"',
      'http.scheme = https',
      END_OF_PROPERTIES,
      's3.bucketName = "not an option"',
    ].join('\n');
    expect(Object.fromEntries(readOptions(data))).toEqual({
      'ftp.passive': 'yes',
      'sftp.port': '2222',
      'test.comment': 'first line\nsecond line',
      'http.scheme': 'https',
    });
  });
});

describe('option values', () => {
  it('reads flags and durations, and falls back on what it cannot read', () => {
    expect([readFlag('Yes', false), readFlag('0', true), readFlag('maybe', true), readFlag(undefined, false)]).toEqual([
      true,
      false,
      true,
      false,
    ]);
    expect([readDuration('1500', null), readDuration('90s', null), readDuration('1m', null)]).toEqual([
      1500, 90_000, 60_000,
    ]);
    expect([readDuration('2h', null), readDuration('soon', 5), readDuration(undefined, null)]).toEqual([
      7_200_000,
      5,
      null,
    ]);
  });

  it('splits a host into its name and port', () => {
    expect(splitHostPort('sftp.example.org')).toEqual({ hostname: 'sftp.example.org', port: null });
    expect(splitHostPort('127.0.0.1:2222')).toEqual({ hostname: '127.0.0.1', port: 2222 });
    expect(splitHostPort('[::1]:2222')).toEqual({ hostname: '::1', port: 2222 });
    expect(splitHostPort('::1')).toEqual({ hostname: '::1', port: null });
    expect(splitHostPort('host:99999')).toEqual({ hostname: 'host:99999', port: null });
  });
});

describe('the options of a transfer method', () => {
  it('has the reference defaults', () => {
    const sftp = methodOptions('sftp', 'sftp.example.org', '');
    expect(sftp).toMatchObject({
      port: 22,
      temporary: { use: true, prefix: '', suffix: '.tmp' },
      makeDirectories: true,
      ignoreCheck: false,
      connectTimeoutMs: 60_000,
      putTimeoutMs: null,
    });
    expect(methodOptions('ftp', 'h', '')).toMatchObject({ port: 21, ignoreCheck: true, temporary: { use: true } });
    expect(methodOptions('s3', 'h', '').temporary.use).toBe(false);
    expect(methodOptions('http', 'h', 'http.usetmp = "true"').temporary.use).toBe(false);
  });

  it('takes the port from the host first, then the option; implicit FTPS defaults to 990', () => {
    expect(methodOptions('sftp', 'h:2200', 'sftp.port = "2222"').port).toBe(2200);
    expect(methodOptions('sftp', 'h', 'sftp.port = "2222"').port).toBe(2222);
    expect(methodOptions('ftps', 'h', 'ftps.connectionType = "FTPS"').port).toBe(990);
    expect(methodOptions('ftps', 'h', 'ftps.connectionType = "FTPES"').port).toBe(21);
  });

  it("reads the method's own options and the ectrans timeouts, and ignores other methods' options", () => {
    const data = [
      'ectrans.connectTimeOut = "10s"',
      'ectrans.putTimeOut = "2m"',
      'ftp.usetmp = "no"',
      'sftp.mkdirs = "false"',
      'sftp.suffix = ".part"',
      'sftp.usetmp = "yes"',
    ].join('\n');
    const sftp = methodOptions('sftp', 'h', data);
    expect(sftp).toMatchObject({
      temporary: { use: true, prefix: '', suffix: '.part' },
      makeDirectories: false,
      connectTimeoutMs: 10_000,
      putTimeoutMs: 120_000,
    });
    expect([...sftp.raw.keys()].sort()).toEqual(['mkdirs', 'suffix', 'usetmp']);
    expect(methodOptions('ftp', 'h', data).temporary.use).toBe(false);
    expect(methodOptions('sftp', 'h', 'sftp.prefix = "."').temporary).toEqual({ use: true, prefix: '.', suffix: '' });
  });
});
