import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectKeyOf } from '../../core/retrieval/retrieve.ts';
import { dataFiles, dataTransfers } from '../../db/schema.ts';
import { md5, type RetrievalScene, retrievalScene } from './support.ts';

/** One copy per data file: whatever its destinations, only for live transfers, again for a new instance only. */
let s: RetrievalScene;
beforeAll(async () => {
  s = await retrievalScene('once');
  await s.quietDestinations(
    [{ name: 'ONCE_A' }, { name: 'ONCE_B' }, { name: 'ONCE_C' }, { name: 'ONCE_D' }],
    [
      ['ONCE_A', 'ONCE_B'],
      ['ONCE_A', 'ONCE_C'],
    ],
  );
});
afterAll(async () => {
  await s?.close();
});

const keysOf = (fileId: number) => s.storeFiles().filter((k) => k.includes(`/${fileId}-`));

describe('retrieved once', () => {
  it('one retrieval and one object for a file put to a destination and its aliases', async () => {
    const put = await s.put('ONCE_A', { size: 3000 });
    const transfers = await s.transfersOf(put.fileId);
    expect(transfers.map((t) => t.destination).sort()).toEqual(['ONCE_A', 'ONCE_B', 'ONCE_C']);

    const { claims } = await s.retrieveDue('mover-once');
    expect(claims.map((c) => c.dataFileId)).toEqual([put.fileId]);
    expect((await s.transfersOf(put.fileId)).map((t) => t.status)).toEqual(['WAIT', 'WAIT', 'WAIT']);
    const objects = await s.objectsOf(put.fileId);
    expect(objects).toHaveLength(1);
    expect(objects[0]).toMatchObject({ size: 3000, md5: md5(put.content), instance: 0, supersededAt: null });
    expect(keysOf(put.fileId)).toEqual([objects[0]!.key]);
    for (const t of transfers)
      expect(s.h.events.filter((l) => l.startsWith(`RET;`) && l.includes(`;DataTransferId=${t.id};`))).toHaveLength(1);
    expect((await s.retrieveDue('mover-once')).claims).toEqual([]);
  });

  it('expired transfers are never fetched', async () => {
    const put = await s.put('ONCE_D', { size: 2000 });
    await s.h.db
      .update(dataTransfers)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(dataTransfers.dataFileId, put.fileId));
    expect((await s.retrieveDue('mover-once')).claims).toEqual([]);
    const [t] = await s.transfersOf(put.fileId);
    expect((await s.historyOf(t!.id)).map((r) => r.status)).not.toContain('FETC');
    expect(await s.objectsOf(put.fileId)).toEqual([]);
    expect(keysOf(put.fileId)).toEqual([]);
  });

  it('a forced put is retrieved again, its former copy superseded', async () => {
    const first = await s.put('ONCE_D', { size: 2500, target: 'forced.bin' });
    await s.retrieveDue('mover-once');
    const [old] = await s.objectsOf(first.fileId);
    const again = await s.put('ONCE_D', { size: 2600, target: 'forced.bin', force: true });
    expect(again.fileId).toBe(first.fileId);
    const file = await s.fileRow(first.fileId);
    expect(file.instance).toBe(old!.instance + 1);
    expect(file.objectKey).toBeNull();
    expect((await s.transfersOf(first.fileId)).map((t) => t.status)).toEqual(['SCHE']);

    const { claims } = await s.retrieveDue('mover-once');
    expect(claims.map((c) => [c.dataFileId, c.instance])).toEqual([[first.fileId, file.instance]]);
    const objects = await s.objectsOf(first.fileId);
    expect(objects).toHaveLength(2);
    const current = objects.find((o) => o.supersededAt === null)!;
    expect(objects.find((o) => o.key === old!.key)!.supersededAt).not.toBeNull();
    expect(current).toMatchObject({ instance: file.instance, size: 2600, md5: md5(again.content) });
    expect((await s.fileRow(first.fileId)).objectKey).toBe(current.key);
    expect((await s.transfersOf(first.fileId)).map((t) => t.status)).toEqual(['WAIT']);
  });

  it('a retriever that lost its lease cannot record its copy, which is removed', async () => {
    const put = await s.put('ONCE_D', { size: 1500 });
    const repo = s.h.ports.repos.retrieval;
    const [stale] = await repo.claim('mover-stale', 30_000, 10);
    expect(stale!.dataFileId).toBe(put.fileId);
    await s.h.db
      .update(dataFiles)
      .set({ fetchLeaseUntil: sql`now() - interval '1 second'` })
      .where(eq(dataFiles.id, put.fileId));
    const [live] = await repo.claim('mover-live', 30_000, 10);
    expect([live!.dataFileId, live!.tries]).toEqual([put.fileId, stale!.tries + 1]);
    expect(await repo.renew('mover-stale', 30_000, [stale!])).toEqual([]);

    const copy = { key: objectKeyOf(stale!), size: 1500, md5: 'x', sha512: 'y' };
    expect(await repo.stored(stale!, 'mover-stale', copy, 'late')).toBeNull();
    expect(await repo.failed(stale!, 'mover-stale', 'late', 0)).toBeNull();
    expect(await s.retrieveOne('mover-stale', stale!)).toBe('lost');
    expect(keysOf(put.fileId)).toEqual([]);
    expect(await s.objectsOf(put.fileId)).toEqual([]);
    expect((await s.transfersOf(put.fileId)).map((t) => t.status)).toEqual(['FETC']);

    expect(await s.retrieveOne('mover-live', live!)).toBe('stored');
    const objects = await s.objectsOf(put.fileId);
    expect(objects.map((o) => o.key)).toEqual([objectKeyOf(live!)]);
    expect(keysOf(put.fileId)).toEqual([objectKeyOf(live!)]);
    expect((await s.transfersOf(put.fileId)).map((t) => t.status)).toEqual(['WAIT']);
  });
});
