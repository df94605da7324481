import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { nodeMultipartStore } from '../../../functions/node/portal-multipart.ts';

/** Where multipart uploads wait on Node: their parts across requests, and the ones given up. */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-multipart-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const store = nodeMultipartStore(dir);
async function* bytes(text: string) {
  yield new TextEncoder().encode(text);
}
const read = async (body: AsyncIterable<Uint8Array>) => {
  let text = '';
  for await (const chunk of body) text += Buffer.from(chunk).toString();
  return text;
};

it('keeps parts by number (a part sent again replaces it) and reads them back in the order asked', async () => {
  const id = await store.create({ userId: 'alice', destination: 'DEST', path: 'a/b.bin' });
  await store.receivePart(id, 2, bytes('second'));
  await store.receivePart(id, 1, bytes('first, once'));
  await store.receivePart(id, 1, bytes('first'));
  expect((await store.parts(id)).map((p) => [p.partNumber, p.bytes])).toEqual([
    [1, 5],
    [2, 6],
  ]);
  expect(await read(store.read(id, [1, 2]))).toBe('firstsecond');
  expect(await store.get(id)).toEqual({ userId: 'alice', destination: 'DEST', path: 'a/b.bin' });
  await store.remove(id);
  expect(await store.get(id)).toBeNull();
});

it('answers no upload for an id that is not one of its own (no path from a client)', async () => {
  expect(await store.get('../../etc')).toBeNull();
  expect(await store.parts('..')).toEqual([]);
});

it('removes uploads left for a week when another is created', async () => {
  const old = await store.create({ userId: 'alice', destination: 'DEST', path: 'old.bin' });
  const recent = await store.create({ userId: 'alice', destination: 'DEST', path: 'recent.bin' });
  const weekAgo = new Date(Date.now() - 7 * 24 * 3600_000 - 60_000);
  fs.utimesSync(path.join(dir, old), weekAgo, weekAgo);
  await store.create({ userId: 'alice', destination: 'DEST', path: 'next.bin' });
  expect(await store.get(old)).toBeNull();
  expect(await store.get(recent)).not.toBeNull();
});
