import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bytesOf, incomingUser, md5, type PortalScene, portalScene } from '../support.ts';
import { BASE, httpsSend, s3, signedChunkedUpload, xmlText } from './support.ts';

/**
 * aws-chunked uploads (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) over real HTTPS, sent in pieces as a
 * client streams them: stored byte for byte, refused whole when one chunk is forged, and read at a
 * cost that grows with the bytes, not with their square, whatever size the client gives a chunk.
 */
let s: PortalScene;
const alice = { accessKeyId: 'alice', secretAccessKey: 'Secret-1' };
const MIB = 1024 * 1024;

beforeAll(async () => {
  s = await portalScene();
  await s.h.addDestination('DEST');
  await incomingUser(s.h, s.admin, { id: 'alice', password: 'Secret-1', grant: ['put'] }, ['DEST']);
}, 60_000);
afterAll(() => s?.close());

const url = (key: string) => `${BASE}/DEST/${key}`;
/** The body in the pieces a client writes it in (64 KiB), whatever its chunks. */
const pieces = (parts: readonly Uint8Array[]) => {
  const whole = Buffer.concat(parts);
  const out: Buffer[] = [];
  for (let at = 0; at < whole.length; at += 64 * 1024) out.push(whole.subarray(at, at + 64 * 1024));
  return out;
};
const split = (bytes: Buffer, size: number) => {
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
  return chunks;
};
const partials = () => fs.readdirSync(path.join(s.uploads, '.partial')).filter((n) => !n.startsWith('multipart'));

it('stores a 32 MiB object sent in 64 KiB signed chunks byte for byte', async () => {
  const bytes = bytesOf(32 * MIB, 1);
  const upload = await signedChunkedUpload(url('big/chunked.bin'), alice, split(bytes, 64 * 1024));
  const r = await httpsSend(s.url, { ...upload, body: pieces(upload.body) });
  expect(r.status, r.text).toBe(200);
  const got = await s3(s.h, url('big/chunked.bin'), alice);
  expect(md5(Buffer.from(await got.arrayBuffer()))).toBe(md5(bytes));
  expect(fs.statSync(path.join(s.uploads, 'DEST', 'big', 'chunked.bin')).size).toBe(bytes.length);
}, 120_000);

it('refuses the whole upload when a chunk in the middle is forged: nothing registered, nothing kept', async () => {
  const bytes = bytesOf(8 * MIB, 2);
  const chunks = split(bytes, 64 * 1024);
  const upload = await signedChunkedUpload(url('big/forged.bin'), alice, chunks, chunks.length / 2);
  const r = await httpsSend(s.url, { ...upload, body: pieces(upload.body) });
  expect([r.status, xmlText(r.text, 'Code')]).toEqual([403, 'SignatureDoesNotMatch']);
  expect(await s.h.ports.repos.portal.file('DEST', 'big/forged.bin', new Date())).toBeNull();
  expect((await s3(s.h, url('big/forged.bin'), alice, { method: 'HEAD' })).status).toBe(404);
  expect(fs.existsSync(path.join(s.uploads, 'DEST', 'big', 'forged.bin'))).toBe(false);
  expect(partials()).toEqual([]);
}, 120_000);

it('refuses a chunk whose signature is wrong even when the chunk is the whole object', async () => {
  const bytes = bytesOf(4 * MIB, 3);
  const upload = await signedChunkedUpload(url('big/one-forged.bin'), alice, [bytes], 0);
  const r = await httpsSend(s.url, { ...upload, body: pieces(upload.body) });
  expect([r.status, xmlText(r.text, 'Code')]).toEqual([403, 'SignatureDoesNotMatch']);
  expect(await s.h.ports.repos.portal.file('DEST', 'big/one-forged.bin', new Date())).toBeNull();
  expect(partials()).toEqual([]);
}, 120_000);

it("costs the server's process CPU in proportion to the bytes, even as one chunk the size of the object", async () => {
  // The CPU time of this process (the server's, and the client's writing the body) around each
  // upload: four times the bytes must cost about four times as much, not sixteen.
  const cost = async (key: string, size: number) => {
    const bytes = bytesOf(size, size);
    const upload = await signedChunkedUpload(url(key), alice, [bytes]);
    const body = pieces(upload.body);
    const before = process.cpuUsage();
    const r = await httpsSend(s.url, { ...upload, body });
    const used = process.cpuUsage(before);
    expect(r.status, r.text).toBe(200);
    return used.user + used.system;
  };
  await cost('cost/warm.bin', 2 * MIB);
  // The least of three each: a collection or another process's burst only ever adds to one measure.
  const least = async (name: string, size: number) => {
    const each = [];
    for (let i = 0; i < 3; i++) each.push(await cost(`cost/${name}-${i}.bin`, size));
    return Math.min(...each);
  };
  const small = await least('small', 4 * MIB);
  const large = await least('large', 16 * MIB);
  expect(large / small, `${large} µs for 16 MiB, ${small} µs for 4 MiB`).toBeLessThan(6);
}, 300_000);
