import { describe, expect, it } from 'vitest';
import { answerDownload, type DownloadRequest, parseRange, servedFile } from '../../core/portal/download.ts';

const now = new Date('2026-11-27T10:00:00.000Z');
const file = {
  size: 1000,
  md5: 'D41D8CD98F00B204E9800998ECF8427E',
  sha512: null,
  lastModified: new Date('2026-11-26T08:30:15.750Z'),
};
const etag = '"d41d8cd98f00b204e9800998ecf8427e"';
const lastModified = 'Thu, 26 Nov 2026 08:30:15 GMT';
const get = (headers: Omit<DownloadRequest, 'method'> = {}) => answerDownload(file, { method: 'GET', ...headers }, now);

describe('a download', () => {
  it('answers 200 with the whole file, its length, validators and Accept-Ranges, never a Content-Range', () => {
    const answer = get();
    expect(answer.status).toBe(200);
    expect(answer.range).toEqual({ start: 0, end: 999 });
    expect(answer.headers).toEqual({
      'content-length': '1000',
      'accept-ranges': 'bytes',
      etag,
      'last-modified': lastModified,
    });
  });

  it('never says the file changed later than now, and has no ETag without an MD5', () => {
    const future = answerDownload(
      { ...file, md5: null, lastModified: new Date('2027-01-01') },
      { method: 'HEAD' },
      now,
    );
    expect(future.headers['last-modified']).toBe(now.toUTCString());
    expect(future.headers.etag).toBeUndefined();
  });

  it('sends one byte range with 206 and its Content-Range', () => {
    const cases: Array<[string, number, number]> = [
      ['bytes=0-99', 0, 99],
      ['bytes=900-', 900, 999],
      ['bytes=-100', 900, 999],
      ['bytes=990-5000', 990, 999],
      ['bytes=-5000', 0, 999],
      ['Bytes = 10 - 10', 10, 10],
    ];
    for (const [range, start, end] of cases) {
      const answer = get({ range });
      expect(answer.status, range).toBe(206);
      expect(answer.range).toEqual({ start, end });
      expect(answer.headers['content-range']).toBe(`bytes ${start}-${end}/1000`);
      expect(answer.headers['content-length']).toBe(String(end - start + 1));
    }
  });

  it('answers 416 with bytes */size for a range past the end', () => {
    for (const range of ['bytes=1000-', 'bytes=5000-6000', 'bytes=-0']) {
      const answer = get({ range });
      expect(answer.status, range).toBe(416);
      expect(answer.headers['content-range']).toBe('bytes */1000');
    }
    const empty = answerDownload({ ...file, size: 0 }, { method: 'GET', range: 'bytes=0-' }, now);
    expect(empty.status).toBe(416);
    expect(answerDownload({ ...file, size: 0 }, { method: 'GET' }, now)).toMatchObject({ status: 200, range: null });
  });

  it('sends the whole file for several ranges, another unit or a malformed range', () => {
    for (const range of ['bytes=0-1,5-6', 'items=0-1', 'bytes=5-3', 'bytes=-', 'bytes=a-b']) {
      expect(get({ range }).status, range).toBe(200);
    }
    expect(parseRange('bytes=0-1,5-6', 10)).toBe('ignored');
  });

  it('answers 304 to If-None-Match with the same tag (lists, weak tags, *), before If-Modified-Since', () => {
    for (const ifNoneMatch of [etag, `"other", ${etag}`, `W/${etag}`, '*']) {
      const answer = get({ ifNoneMatch });
      expect(answer.status, ifNoneMatch).toBe(304);
      expect(answer.headers).toEqual({ etag, 'last-modified': lastModified });
    }
    expect(get({ ifNoneMatch: '"other"', ifModifiedSince: lastModified }).status).toBe(200);
  });

  it('answers 304 to If-Modified-Since at or after the last change, to the second', () => {
    expect(get({ ifModifiedSince: lastModified }).status).toBe(304);
    expect(get({ ifModifiedSince: 'Fri, 27 Nov 2026 00:00:00 GMT' }).status).toBe(304);
    expect(get({ ifModifiedSince: 'Thu, 26 Nov 2026 08:30:14 GMT' }).status).toBe(200);
    expect(get({ ifModifiedSince: 'not a date' }).status).toBe(200);
  });

  it('sends the range only while If-Range still names this file (strong tag, or its date)', () => {
    expect(get({ range: 'bytes=10-', ifRange: etag }).status).toBe(206);
    expect(get({ range: 'bytes=10-', ifRange: lastModified }).status).toBe(206);
    expect(get({ range: 'bytes=10-', ifRange: '"older"' }).status).toBe(200);
    expect(get({ range: 'bytes=10-', ifRange: `W/${etag}` }).status).toBe(200);
    expect(get({ range: 'bytes=10-', ifRange: 'Wed, 25 Nov 2026 08:30:15 GMT' }).status).toBe(200);
  });

  it('answers 412 when If-Match or If-Unmodified-Since fails', () => {
    expect(get({ ifMatch: '"other"' }).status).toBe(412);
    expect(get({ ifMatch: `W/${etag}` }).status).toBe(412);
    expect(get({ ifMatch: etag }).status).toBe(200);
    expect(get({ ifUnmodifiedSince: 'Wed, 25 Nov 2026 00:00:00 GMT' }).status).toBe(412);
    expect(get({ ifUnmodifiedSince: lastModified }).status).toBe(200);
  });
});

describe('the sums a file is served with', () => {
  const registered = {
    size: 3,
    checksum: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    stored: null,
    modifiedAt: new Date('2026-11-26T08:30:15Z'),
  };
  const stored = { md5: 'BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB', sha512: 'c2hhNTEy' };

  it('are those of the stored copy once retrieved, over any MD5 recorded before', () => {
    const served = servedFile({ ...registered, stored });
    expect(served).toMatchObject({ md5: 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', sha512: 'c2hhNTEy' });
    const answer = answerDownload(served, { method: 'GET', range: 'bytes=1-' }, now);
    expect(answer.status).toBe(206);
    // The digest is the whole file's (a representation's), whatever range goes.
    expect(answer.headers).toMatchObject({ etag: `"${'b'.repeat(32)}"`, 'repr-digest': 'sha-512=:c2hhNTEy:' });
    expect(answerDownload(served, { method: 'GET', ifNoneMatch: `"${'b'.repeat(32)}"` }, now).status).toBe(304);
  });

  it('are the recorded MD5 alone before, and nothing without one', () => {
    const served = servedFile(registered);
    expect(served).toMatchObject({ md5: 'a'.repeat(32), sha512: null });
    expect(answerDownload(served, { method: 'GET' }, now).headers['repr-digest']).toBeUndefined();
    expect(servedFile({ ...registered, checksum: 'not an md5' })).toMatchObject({ md5: null, sha512: null });
  });
});
