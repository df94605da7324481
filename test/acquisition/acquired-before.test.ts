import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataTransfers } from '../../db/schema.ts';
import { restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/** How a listing's entries are looked up among what was acquired before: any number of them, in one statement. */
let h: Harness;
let sources: string;
beforeAll(async () => {
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-acquired-before-')));
  h = await createHarness({ sourceRoots: [sources] });
});
afterAll(async () => {
  await h?.close();
  fs.rmSync(sources, { recursive: true, force: true });
});

describe('files acquired before', () => {
  it('are found among 40,000 entries of one listing, past what two parameters a key would allow', async () => {
    const admin = await h.client('operator', ['.*']);
    await restoreDestination(h, admin, 'MANY_KEYS', [{ method: 'test' }], { start: false });
    const source = path.join(sources, 'held.bin');
    fs.writeFileSync(source, 'held');
    const q = new URLSearchParams({ destination: 'MANY_KEYS', source, target: 'held.bin' });
    const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
    expect(r.status, r.text).toBe(200);
    const [held] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
    const keys = Array.from({ length: 40_000 }, (_, i) => ({ target: `f${i}.bin`, uniqueName: `/in/f${i}.bin` }));
    keys.push({ target: 'held.bin', uniqueName: held!.uniqueName });
    const found = await h.ports.repos.acquisition.acquiredBefore('MANY_KEYS', keys);
    expect([...found.values()]).toEqual([
      expect.objectContaining({ dataFileId: r.json.id, transferId: held!.id, size: 4 }),
    ]);
  });
});
