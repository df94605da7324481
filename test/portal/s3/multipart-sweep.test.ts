import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_MULTIPART_LIMITS } from '../../../core/portal/multipart-limits.ts';
import { nodeUploadStore, removeStaleMultipart } from '../../../functions/node/portal-uploads.ts';

/**
 * The periodic sweep aborts every user's stale multipart uploads, removing their parts from disk,
 * though their users never come back; a fresh upload is kept.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-multipart-sweep-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const chunks = async function* (bytes: Uint8Array) {
  yield bytes;
};

describe('the sweep of multipart uploads', () => {
  it('removes a stale upload of a user who does nothing more, and keeps a fresh one', async () => {
    const store = nodeUploadStore(dir, { ...DEFAULT_MULTIPART_LIMITS, staleAfterMs: 3600_000 });
    const multipart = store.multipart!;
    const upload = { userId: 'gone', destination: 'DEST', path: 'a.bin' };
    const stale = await multipart.create(upload);
    await multipart.receivePart(stale, 1, chunks(new Uint8Array(1000)));
    const fresh = await multipart.create({ ...upload, userId: 'here' });
    await multipart.receivePart(fresh, 1, chunks(new Uint8Array(1000)));
    const folder = path.join(dir, '.partial', 'multipart', stale);
    expect(fs.existsSync(path.join(folder, '1.part'))).toBe(true);
    // Its last part two hours ago.
    const past = new Date(Date.now() - 2 * 3600_000);
    fs.utimesSync(folder, past, past);

    expect(await removeStaleMultipart(store, quiet)).toBe(1);
    expect(fs.existsSync(folder)).toBe(false);
    expect(fs.existsSync(path.join(dir, '.partial', 'multipart', fresh, '1.part'))).toBe(true);
    expect(await multipart.get(fresh)).not.toBeNull();
  });
});
