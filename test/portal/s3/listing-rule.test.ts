import { afterAll, beforeAll, expect, it } from 'vitest';
import { basic } from '../../support/harness.ts';
import { bytesOf, incomingUser, type PortalScene, portalScene, putFile } from '../support.ts';
import { BASE, s3, xmlAll, xmlText } from './support.ts';

/**
 * What a user may see, S3 against HTTPS for the same user and portal.dirPathPermRegex: every key
 * and common prefix a listing of S3 shows (V2 and V1, with or without a delimiter and a prefix,
 * page after page) is a path the HTTPS listing of its directory shows, and no other.
 */
let s: PortalScene;
const ruled = { accessKeyId: 'ruled', secretAccessKey: 'Secret-1' };
const auth = basic('ruled', 'Secret-1');

/** The destination's own, `public` and below it, and `open/deep` but not `open`: `secret` and `open` are not. */
const DIR_RULE = 'DEST|DEST/public(/.*)?|DEST/open/deep';
const layout = [
  'open/deep/x.bin',
  'open/y.bin',
  'public/p1.bin',
  'public/sub/p2.bin',
  'secret/inner/s3.bin',
  'secret/s1.bin',
  'secret/s2.txt',
  'top.txt',
];
const directories = ['', 'open', 'open/deep', 'public', 'public/sub', 'secret', 'secret/inner'];

beforeAll(async () => {
  s = await portalScene();
  await s.h.addDestination('DEST');
  await incomingUser(s.h, s.admin, { id: 'ruled', password: 'Secret-1' }, ['DEST']);
  await s.h.ports.repos.portal.setOption('ruled', 'portal.dirPathPermRegex', DIR_RULE);
  await s.h.ports.repos.portal.setOption('ruled', 'portal.getPathPermRegex', 'DEST/(public/.*|top\\.txt)');
  for (const [i, key] of layout.entries()) await putFile(s.h, s.admin, s.sources, 'DEST', key, bytesOf(10, i + 1));
}, 60_000);
afterAll(() => s?.close());

/** Every path the HTTPS listings show this user: each directory's names, where it may be listed. */
async function httpsVisible() {
  const files = new Set<string>();
  const prefixes = new Set<string>();
  for (const directory of directories) {
    const r = await s.h.call('GET', `/portal/data/DEST/${directory === '' ? '' : `${directory}/`}`, {
      auth,
      headers: { accept: 'application/json' },
    });
    if (r.status === 403) continue;
    expect(r.status, directory).toBe(200);
    const at = directory === '' ? '' : `${directory}/`;
    for (const row of r.json as Array<{ name: string; type: string }>) {
      if (row.type === 'file') files.add(`${at}${row.name}`);
      else prefixes.add(`${at}${row.name}/`);
    }
  }
  return { files, prefixes };
}

/** Every key and common prefix of a listing, page after page (max-keys 1), as V2 or V1 pages them. */
async function s3Listing(query: string, version: 1 | 2) {
  const keys: string[] = [];
  const prefixes: string[] = [];
  let next: string | null = null;
  for (let page = 0; page < 50; page++) {
    const paging =
      next === null
        ? ''
        : version === 2
          ? `&continuation-token=${encodeURIComponent(next)}`
          : `&marker=${encodeURIComponent(next)}`;
    const r = await s3(s.h, `${BASE}/DEST?max-keys=1${version === 2 ? '&list-type=2' : ''}${query}${paging}`, ruled);
    const xml = await r.text();
    if (r.status !== 200) return { status: r.status, code: xmlText(xml, 'Code'), keys, prefixes };
    keys.push(...xmlAll(xml, 'Key'));
    prefixes.push(...xmlAll(xml, 'Prefix').slice(1));
    if (xmlText(xml, 'IsTruncated') !== 'true') return { status: 200, code: null, keys, prefixes };
    next = version === 2 ? xmlText(xml, 'NextContinuationToken') : (xmlText(xml, 'NextMarker') ?? keys.at(-1)!);
  }
  throw new Error('the listing never ends');
}

it('lists by the same rule as HTTPS: without a delimiter, with a prefix, with one, page by page, V2 and V1', async () => {
  const https = await httpsVisible();
  // The rule is the one this scene is about: some paths are hidden over HTTPS.
  expect([...https.files].sort()).toEqual(['open/deep/x.bin', 'public/p1.bin', 'public/sub/p2.bin', 'top.txt']);
  const expected = (prefix: string) => [...https.files].filter((k) => k.startsWith(prefix)).sort();
  for (const version of [2, 1] as const) {
    for (const prefix of ['', 'open/', 'public', 'o', 'secret/i', 'open/deep/']) {
      const listed = await s3Listing(`&prefix=${encodeURIComponent(prefix)}`, version);
      const denied = listed.status === 403;
      // A prefix inside a directory that may not be listed is refused, as its HTTPS listing is.
      if (denied) expect(prefix.startsWith('secret/') || prefix === 'open/').toBe(true);
      else expect(listed.keys, `V${version} prefix ${prefix}`).toEqual(expected(prefix));
    }
    const rolled = await s3Listing('&delimiter=%2F', version);
    expect(rolled.keys).toEqual(['top.txt']);
    for (const p of rolled.prefixes) expect(https.prefixes).toContain(p);
    expect(rolled.prefixes).toEqual(['open/', 'public/', 'secret/']);
    // A delimiter that is not '/' rolls keys up inside hidden directories: those prefixes are hidden.
    const dots = await s3Listing('&delimiter=.', version);
    expect(dots.prefixes).toEqual(['open/deep/x.', 'public/p1.', 'public/sub/p2.', 'top.']);
    const deeper = await s3Listing('&delimiter=%2F&prefix=public%2F', version);
    expect([deeper.keys, deeper.prefixes]).toEqual([['public/p1.bin'], ['public/sub/']]);
  }
  const after = await s3Listing('&start-after=open%2Fdeep%2Fx.bin', 2);
  expect(after.keys).toEqual(['public/p1.bin', 'public/sub/p2.bin', 'top.txt']);
  const within = await s3Listing('&start-after=secret%2Fs1.bin', 2);
  expect(within.keys).toEqual(['top.txt']);
});

it('refuses GET and HEAD of a path the user may not read, over S3 as over HTTPS', async () => {
  for (const key of ['secret/s1.bin', 'open/deep/x.bin']) {
    const get = await s3(s.h, `${BASE}/DEST/${key}`, ruled);
    expect([get.status, xmlText(await get.text(), 'Code')], key).toEqual([403, 'AccessDenied']);
    expect((await s3(s.h, `${BASE}/DEST/${key}`, ruled, { method: 'HEAD' })).status, key).toBe(403);
    expect((await s.h.call('GET', `/portal/data/DEST/${key}`, { auth })).status, key).toBe(403);
  }
  const allowed = await s3(s.h, `${BASE}/DEST/public/p1.bin`, ruled);
  expect([allowed.status, (await allowed.arrayBuffer()).byteLength]).toEqual([200, 10]);
  expect((await s.h.call('GET', '/portal/data/DEST/public/p1.bin', { auth })).status).toBe(200);
});
