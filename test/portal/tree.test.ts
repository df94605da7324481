import { describe, expect, it } from 'vitest';
import { contentTypeOf } from '../../core/portal/media-types.ts';
import {
  byteOrder,
  destinationEntries,
  listingRows,
  parseTreePath,
  readPage,
  treeTarget,
} from '../../core/portal/tree.ts';
import { incomingOptions } from '../../core/portal/uploads.ts';
import { listingType } from '../../functions/portal/listing.tsx';
import { type FormPart, formBoundary, formParts } from '../../functions/portal/multipart.ts';

describe("the portal tree's paths", () => {
  it('reads segments once decoded, and where they lead', () => {
    expect(parseTreePath('')).toEqual({ segments: [], slash: true });
    expect(treeTarget(parseTreePath('')!)).toEqual({ kind: 'root' });
    expect(treeTarget(parseTreePath('DEST')!)).toEqual({
      kind: 'directory',
      destination: 'DEST',
      prefix: '',
      slash: false,
    });
    expect(treeTarget(parseTreePath('DEST/')!)).toEqual({
      kind: 'directory',
      destination: 'DEST',
      prefix: '',
      slash: true,
    });
    expect(treeTarget(parseTreePath('DEST/a%20b/c/')!)).toEqual({
      kind: 'directory',
      destination: 'DEST',
      prefix: 'a b/c/',
      slash: true,
    });
    expect(treeTarget(parseTreePath('DEST/a%20b/c.txt')!)).toEqual({
      kind: 'file',
      destination: 'DEST',
      path: 'a b/c.txt',
    });
    // A percent sign in a name is one once decoded, not decoded again.
    expect(parseTreePath('DEST/100%2525')?.segments).toEqual(['DEST', '100%25']);
  });

  it('refuses every segment that could step outside the tree or name nothing', () => {
    for (const path of [
      'DEST/../OTHER/x',
      'DEST/%2e%2e/OTHER/x',
      'DEST/%2E%2E/x',
      'DEST/./x',
      'DEST/%2e/x',
      'DEST/a%2fb',
      'DEST/a%2Fb',
      'DEST/a%5cb',
      'DEST/a\\b',
      'DEST/a%00b',
      'DEST/a%0ab',
      'DEST//x',
      'DEST/%',
      'DEST/%e0%a4%a',
      '..',
    ]) {
      expect(parseTreePath(path), path).toBeNull();
    }
  });
});

describe("the portal's listings", () => {
  it('gives size and time only with the size and mtime permissions', () => {
    const modifiedAt = new Date('2026-01-02T03:04:05Z');
    const entries = [
      { type: 'directory' as const, name: 'sub' },
      { type: 'file' as const, name: 'a', file: { size: 7, modifiedAt } as never },
    ];
    expect(listingRows(entries, { permissions: ['dir', 'size', 'mtime'] })).toEqual([
      { name: 'sub', type: 'directory', size: null, lastModified: null },
      { name: 'a', type: 'file', size: 7, lastModified: modifiedAt },
    ]);
    expect(listingRows(entries, { permissions: ['dir'] })[1]).toEqual({
      name: 'a',
      type: 'file',
      size: null,
      lastModified: null,
    });
  });

  it('pages the destinations in byte order, and reads limit and after', () => {
    const names = ['b', 'Z', 'a', 'é', 'a_b'];
    expect(destinationEntries(names, { after: null, limit: 10 }).map((e) => e.name)).toEqual([
      'Z',
      'a',
      'a_b',
      'b',
      'é',
    ]);
    expect(destinationEntries(names, { after: 'a_b/', limit: 2 }).map((e) => e.name)).toEqual(['b', 'é']);
    expect(byteOrder('\u{1F600}', '\uFFFD')).toBeGreaterThan(0);
    expect(readPage({})).toEqual({ limit: 1000, after: null });
    expect(readPage({ limit: '10000', after: 'x/' })).toEqual({ limit: 10000, after: 'x/' });
    for (const limit of ['0', '10001', '-1', '1.5', 'ten', '']) expect(typeof readPage({ limit })).toBe('string');
  });

  it('answers JSON or CSV to those who ask for them, HTML to everyone else', () => {
    expect(listingType(undefined)).toBe('html');
    expect(listingType('*/*')).toBe('html');
    expect(listingType('application/json')).toBe('json');
    expect(listingType('text/csv')).toBe('csv');
    expect(listingType('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8')).toBe('html');
    expect(listingType('text/html;q=0.5, application/json')).toBe('json');
    expect(listingType('application/json;q=0, text/csv')).toBe('csv');
  });

  it('never serves a file as a page: only a few types a browser shows in place', () => {
    expect(contentTypeOf('dir/x.html')).toBe('application/octet-stream');
    expect(contentTypeOf('x.svg')).toBe('application/octet-stream');
    expect(contentTypeOf('x.exe')).toBe('application/octet-stream');
    expect(contentTypeOf('notes.TXT')).toBe('text/plain; charset=utf-8');
  });

  it('gives the data formats WIS2 names their WMO media types', () => {
    expect(contentTypeOf('a/synop.bufr')).toBe('application/bufr');
    expect(contentTypeOf('t2m.grib2')).toBe('application/grib');
    expect(contentTypeOf('T.GRIB')).toBe('application/grib');
    expect(contentTypeOf('sst.nc')).toBe('application/netcdf');
    expect(contentTypeOf('obs.geojson')).toBe('application/geo+json');
  });
});

describe("a destination's incoming options", () => {
  it('reads standby, priority, lifetime and delay as the reference names them, and skips what is unreadable', () => {
    const data = [
      'incoming.standby = "yes"',
      'incoming.priority = "5"',
      'incoming.lifetime = "3d"',
      'incoming.delay = "10m"',
      'scheduler.standby = "no"',
    ].join('\n');
    expect(incomingOptions(data)).toEqual({ standby: true, priority: 5, lifetime: '3d', at: '+10m' });
    expect(incomingOptions('incoming.priority = "100"\nincoming.lifetime = "soon"\nincoming.standby = "no"')).toEqual(
      {},
    );
    expect(incomingOptions('')).toEqual({});
  });
});

describe('the upload form reader', () => {
  const boundary = '----form7MA4YWxkTrZu0gW';
  const body = (text: string, chunk: number) => {
    const bytes = new TextEncoder().encode(text);
    return new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += chunk) controller.enqueue(bytes.slice(i, i + chunk));
        controller.close();
      },
    });
  };
  const read = async (stream: ReadableStream<Uint8Array>) => {
    const parts: Array<Omit<FormPart, 'body'> & { text: string }> = [];
    for await (const part of formParts(stream, boundary)) {
      const chunks: Uint8Array[] = [];
      for await (const c of part.body) chunks.push(c);
      parts.push({ name: part.name, filename: part.filename, text: Buffer.concat(chunks).toString('latin1') });
    }
    return parts;
  };
  const content = `a--${boundary}b\r\n--${boundary.slice(0, -1)}\r\n\r\n-- x\r`;
  const form = [
    'preamble',
    `--${boundary}`,
    'Content-Disposition: form-data; name="csrf"',
    '',
    'tok3n',
    `--${boundary}`,
    'Content-Disposition: form-data; name="file"; filename="C:\\\\Users\\\\me\\\\a \\"b\\".bin"',
    'Content-Type: application/octet-stream',
    '',
    content,
    `--${boundary}--`,
    '',
  ].join('\r\n');

  it('reads fields and files split anywhere, a delimiter-like line inside a file kept as bytes', async () => {
    expect(formBoundary(`multipart/form-data; boundary=${boundary}`)).toBe(boundary);
    expect(formBoundary(`multipart/form-data; boundary="${boundary}"`)).toBe(boundary);
    expect(formBoundary('application/x-www-form-urlencoded')).toBeNull();
    for (const chunk of [1, 3, 7, 64, 4096]) {
      expect(await read(body(form, chunk)), `chunks of ${chunk}`).toEqual([
        { name: 'csrf', filename: null, text: 'tok3n' },
        { name: 'file', filename: 'a "b".bin', text: content },
      ]);
    }
  });

  it('refuses a body that ends inside a part', async () => {
    await expect(read(body(form.slice(0, form.indexOf('-- x')), 5))).rejects.toThrow(/ends inside a part/);
  });
});
