import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bytesOf, incomingUser, md5, type PortalScene, portalScene } from '../support.ts';
import { BASE, s3, xmlText } from './support.ts';

/**
 * Multipart uploads within bounds, measured at the server: their parts count against the upload
 * quota as they arrive (what the parts keep on disk stays within it), the parts of an upload, their
 * size and the uploads open at once are limited, and an upload left open too long is aborted, its
 * part files removed.
 */
let s: PortalScene;
const QUOTA = 1_000_000;
const limits = { maxParts: 3, maxPartBytes: 1024 * 1024, maxOpenUploads: 2, staleAfterMs: 60_000 };
const capped = { accessKeyId: 'capped', secretAccessKey: 'Secret-1' };
const alice = { accessKeyId: 'alice', secretAccessKey: 'Secret-2' };
const bob = { accessKeyId: 'bob', secretAccessKey: 'Secret-3' };
const dave = { accessKeyId: 'dave', secretAccessKey: 'Secret-4' };

beforeAll(async () => {
  s = await portalScene({ portalMultipartLimits: limits });
  await s.h.addDestination('DEST');
  await incomingUser(s.h, s.admin, { id: 'capped', password: 'Secret-1', grant: ['put'] }, ['DEST']);
  await s.h.ports.repos.portal.setOption('capped', 'portal.maxUploadBytes', String(QUOTA));
  await incomingUser(s.h, s.admin, { id: 'alice', password: 'Secret-2', grant: ['put'] }, ['DEST']);
  await incomingUser(s.h, s.admin, { id: 'bob', password: 'Secret-3', grant: ['put'] }, ['DEST']);
  await incomingUser(s.h, s.admin, { id: 'dave', password: 'Secret-4', grant: ['put'] }, ['DEST']);
}, 60_000);
afterAll(() => s?.close());

const url = (p: string) => `${BASE}/DEST/${p}`;
const code = async (r: Response) => [r.status, xmlText(await r.text(), 'Code')];
const multipartDir = () => path.join(s.uploads, '.partial', 'multipart');
/** The bytes of the part files an upload keeps on disk. */
const partBytes = (uploadId: string) => {
  const at = path.join(multipartDir(), uploadId);
  if (!fs.existsSync(at)) return 0;
  return fs
    .readdirSync(at)
    .reduce((n, name) => n + fs.statSync(path.join(at, name)).size * Number(!name.endsWith('.json')), 0);
};
const create = async (who: typeof alice, key: string) => {
  const r = await s3(s.h, url(`${key}?uploads`), who, { method: 'POST' });
  return { status: r.status, text: await r.text() };
};
const part = (who: typeof alice, key: string, uploadId: string, n: number, body: Buffer, headers = {}) =>
  s3(s.h, url(`${key}?partNumber=${n}&uploadId=${uploadId}`), who, {
    method: 'PUT',
    body,
    payloadHash: 'UNSIGNED-PAYLOAD',
    headers,
  });

it('counts parts against the upload quota as their bytes arrive; the completed file counts no more', async () => {
  const uploaded = async () => (await s.h.ports.repos.portal.trafficSince('capped', new Date(0))).uploadBytes;
  const uploadId = xmlText((await create(capped, 'q/multi.bin')).text, 'UploadId')!;
  const parts = [bytesOf(400_000, 1), bytesOf(400_000, 2)];
  const etags: string[] = [];
  for (const [i, bytes] of parts.entries()) {
    const r = await part(capped, 'q/multi.bin', uploadId, i + 1, bytes);
    expect(r.status, await r.clone().text()).toBe(200);
    etags.push(r.headers.get('etag')!);
  }
  expect(await uploaded()).toBe(800_000);
  const body = `<CompleteMultipartUpload>${etags
    .map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`)
    .join('')}</CompleteMultipartUpload>`;
  const done = await s3(s.h, url(`q/multi.bin?uploadId=${uploadId}`), capped, { method: 'POST', body });
  expect(done.status, await done.clone().text()).toBe(200);
  expect(await uploaded()).toBe(800_000);
  expect((await s.h.ports.repos.portal.file('DEST', 'q/multi.bin', new Date()))?.size).toBe(800_000);
  expect(md5(fs.readFileSync(path.join(s.uploads, 'DEST', 'q', 'multi.bin')))).toBe(md5(Buffer.concat(parts)));

  const next = xmlText((await create(capped, 'q/next.bin')).text, 'UploadId')!;
  expect((await part(capped, 'q/next.bin', next, 1, bytesOf(150_000, 3))).status).toBe(200);
  expect(await uploaded()).toBe(950_000);
  // Declared over what the quota leaves: refused before a byte is taken.
  const declared = await part(capped, 'q/next.bin', next, 2, bytesOf(400_000, 4), { 'content-length': '400000' });
  expect(await code(declared)).toEqual([503, 'SlowDown']);
  expect(await uploaded()).toBe(950_000);
  // Not declared: cut once it goes over, nothing of it kept.
  const streamed = await part(capped, 'q/next.bin', next, 2, bytesOf(400_000, 4));
  expect(await code(streamed)).toEqual([503, 'SlowDown']);
  expect(partBytes(next)).toBe(150_000);
  expect(await uploaded()).toBeGreaterThan(QUOTA);
  expect(await uploaded()).toBeLessThanOrEqual(QUOTA + 400_000);
});

it('refuses a part number past the parts an upload may have, and a part larger than a part may be', async () => {
  const uploadId = xmlText((await create(alice, 'l/parts.bin')).text, 'UploadId')!;
  expect(await code(await part(alice, 'l/parts.bin', uploadId, 4, Buffer.from('x')))).toEqual([400, 'InvalidArgument']);
  const large = bytesOf(limits.maxPartBytes + 1, 4);
  const declared = await part(alice, 'l/parts.bin', uploadId, 1, large, { 'content-length': String(large.length) });
  expect(await code(declared)).toEqual([400, 'EntityTooLarge']);
  expect(await code(await part(alice, 'l/parts.bin', uploadId, 1, large))).toEqual([400, 'EntityTooLarge']);
  expect(partBytes(uploadId)).toBe(0);
  expect((await part(alice, 'l/parts.bin', uploadId, 3, Buffer.from('x'))).status).toBe(200);
  expect((await s3(s.h, url(`l/parts.bin?uploadId=${uploadId}`), alice, { method: 'DELETE' })).status).toBe(204);
});

it('refuses to begin more uploads than a user may have open; aborting one makes room', async () => {
  const first = xmlText((await create(bob, 'o/1.bin')).text, 'UploadId')!;
  expect((await create(bob, 'o/2.bin')).status).toBe(200);
  const third = await create(bob, 'o/3.bin');
  expect([third.status, xmlText(third.text, 'Code')]).toEqual([400, 'TooManyUploads']);
  // Another user's count is its own.
  expect((await create(alice, 'o/a.bin')).status).toBe(200);
  expect((await s3(s.h, url(`o/1.bin?uploadId=${first}`), bob, { method: 'DELETE' })).status).toBe(204);
  expect((await create(bob, 'o/3.bin')).status).toBe(200);
});

it('aborts an upload left open too long: its part files are gone and its id answers NoSuchUpload', async () => {
  const uploadId = xmlText((await create(alice, 's/stale.bin')).text, 'UploadId')!;
  expect((await part(alice, 's/stale.bin', uploadId, 1, bytesOf(1000, 5))).status).toBe(200);
  expect(partBytes(uploadId)).toBe(1000);
  const old = new Date(Date.now() - limits.staleAfterMs - 5000);
  fs.utimesSync(path.join(multipartDir(), uploadId), old, old);
  // The next upload begun sweeps the stale ones.
  const next = xmlText((await create(dave, 's/next.bin')).text, 'UploadId');
  expect(next).not.toBeNull();
  expect(fs.existsSync(path.join(multipartDir(), uploadId))).toBe(false);
  expect(await code(await part(alice, 's/stale.bin', uploadId, 2, Buffer.from('x')))).toEqual([404, 'NoSuchUpload']);
});
