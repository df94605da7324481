import { describe, expect, it } from 'vitest';
import { answerCheckFile, knownSums } from '../../core/portal/file-sums.ts';
import { parseSumCommand, shellWords, sumLine } from '../../core/portal/sum-commands.ts';

/** The rules of the sums over SFTP that the real clients' tests (test/portal/sftp) meet only in part. */
describe('shellWords', () => {
  it('reads words as sh does, with its quoting', () => {
    expect(shellWords(`md5sum  /a\\ b 'c d'"e f" "g\\"h\\\\i\\j" é\\\nk ''`)).toEqual([
      'md5sum',
      '/a b',
      'c de f',
      'g"h\\i\\j',
      'ék',
      '',
    ]);
    expect(shellWords("md5sum /DEST/it\\'s\\ \\$5.txt")).toEqual(['md5sum', "/DEST/it's $5.txt"]);
  });

  it('refuses anything sh would act on, and an unterminated quote', () => {
    for (const line of [
      'md5sum a;b',
      'md5sum a|b',
      'md5sum a&',
      'md5sum $x',
      'md5sum `id`',
      'md5sum "$x"',
      'md5sum "`id`"',
      'md5sum a*',
      'md5sum ~/a',
      'md5sum #a',
      'md5sum a\nid',
      'md5sum (a)',
      'md5sum <a',
      "md5sum 'a",
      'md5sum "a',
      'md5sum a\\',
    ]) {
      expect(shellWords(line), JSON.stringify(line)).toBeNull();
    }
  });
});

describe('parseSumCommand', () => {
  it('takes md5sum and sha512sum of files, or of the input, without options', () => {
    expect(parseSumCommand('md5sum')).toEqual({ program: 'md5sum', algorithm: 'md5', files: [] });
    expect(parseSumCommand('sha512sum /a /b')).toEqual({
      program: 'sha512sum',
      algorithm: 'sha512',
      files: ['/a', '/b'],
    });
    for (const line of ['sha1sum /a', 'md5sum -c /a', 'md5sum -', 'md5sum -- /a', 'MD5SUM /a', 'x=1 md5sum /a', '']) {
      expect(parseSumCommand(line), line).toBeNull();
    }
  });
});

describe('sumLine', () => {
  it("escapes a name as GNU md5sum does, the line then starting with '\\'", () => {
    expect(sumLine('ab', 'a b')).toBe('ab  a b\n');
    expect(sumLine('ab', 'a\\b\nc\rd')).toBe('\\ab  a\\\\b\\nc\\rd\n');
  });
});

describe('answerCheckFile', () => {
  const sums = knownSums({
    size: 3,
    checksum: null,
    stored: { md5: '900150983CD24FB0D6963F7D28E17F72', sha512: Buffer.from('abc').toString('base64') },
    modifiedAt: new Date(0),
  });
  const ask = (algorithms: string, start = 0n, length = 0n, blockSize = 0) =>
    answerCheckFile({ algorithms, start, length, blockSize }, 3, sums);

  it('answers the first algorithm of the list with a known sum, in hex', () => {
    expect(sums).toEqual({ md5: '900150983cd24fb0d6963f7d28e17f72', sha512: '616263' });
    expect(ask('sha1, sha512 ,md5')).toEqual({ kind: 'sum', algorithm: 'sha512', hex: '616263' });
    expect(ask('md5', 0n, 3n, 256)).toMatchObject({ kind: 'sum', algorithm: 'md5' });
  });

  it('supports the whole file only, and refuses a block size below 256', () => {
    expect(ask('md5', 1n).kind).toBe('unsupported');
    expect(ask('md5', 0n, 2n).kind).toBe('unsupported');
    expect(ask('md5', 0n, 0n, 255).kind).toBe('invalid');
    expect(ask('sha1').kind).toBe('unsupported');
  });
});
