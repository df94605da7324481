import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectKeyOf, recordTogether } from '../../core/retrieval/retrieve.ts';
import { startRetriever } from '../../core/retrieval/retriever.ts';
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

const copyOf = (claim: { size: number }) => ({
  size: claim.size,
  md5: 'x',
  sha512: 'y',
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
    expect(objects[0]).toMatchObject({
      size: 3000,
      md5: md5(put.content),
      instance: 0,
      supersededAt: null,
    });
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
    const again = await s.put('ONCE_D', {
      size: 2600,
      target: 'forced.bin',
      force: true,
    });
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
    expect(current).toMatchObject({
      instance: file.instance,
      size: 2600,
      md5: md5(again.content),
    });
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

    const copy = {
      key: objectKeyOf(stale!),
      size: 1500,
      md5: 'x',
      sha512: 'y',
    };
    expect(await repo.stored([{ claim: stale!, mover: 'mover-stale', copy, comment: 'late' }])).toEqual([null]);
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

  it('copies recorded together: each on its own fence, a stale one changing nothing of the others', async () => {
    const puts = [await s.put('ONCE_D', { size: 1100 }), await s.put('ONCE_D', { size: 1200 })];
    const stalePut = await s.put('ONCE_D', { size: 1300 });
    const repo = s.h.ports.repos.retrieval;
    const claims = await repo.claim('mover-batch', 30_000, 10);
    expect(claims.map((c) => c.dataFileId).sort()).toEqual([...puts, stalePut].map((p) => p.fileId).sort());
    await s.h.db
      .update(dataFiles)
      .set({ fetchLeaseUntil: sql`now() - interval '1 second'` })
      .where(eq(dataFiles.id, stalePut.fileId));
    const [taken] = await repo.claim('mover-other', 30_000, 10);
    expect(taken!.dataFileId).toBe(stalePut.fileId);

    const record = (fileId: number) => {
      const claim = claims.find((c) => c.dataFileId === fileId)!;
      return {
        claim,
        mover: 'mover-batch',
        comment: 'together',
        copy: { ...copyOf(claim), key: objectKeyOf(claim) },
      };
    };
    const answered = await repo.stored([record(puts[0]!.fileId), record(stalePut.fileId), record(puts[1]!.fileId)]);
    expect(answered[1]).toBeNull();
    for (const [i, put] of [[0, puts[0]!] as const, [2, puts[1]!] as const]) {
      expect(answered[i]!.map((t) => [t.destination, t.status])).toEqual([['ONCE_D', 'WAIT']]);
      const [row] = await s.objectsOf(put.fileId);
      expect(row).toMatchObject({
        key: objectKeyOf(record(put.fileId).claim),
        size: put.content.length,
      });
      const [t] = await s.transfersOf(put.fileId);
      expect((await s.historyOf(t!.id)).at(-1)).toMatchObject({
        status: 'WAIT',
        comment: 'together',
      });
    }
    expect(await s.objectsOf(stalePut.fileId)).toEqual([]);
    expect((await s.transfersOf(stalePut.fileId)).map((t) => t.status)).toEqual(['FETC']);
    expect(await s.retrieveOne('mover-other', taken!)).toBe('stored');
  });

  it('copies stored while a record is on its way are recorded by the next, together, each its own', async () => {
    const puts = [];
    for (let i = 0; i < 12; i++) puts.push(await s.put('ONCE_D', { size: 700 + i }));
    const repo = s.h.ports.repos.retrieval;
    const claims = await repo.claim('mover-together', 30_000, 20);
    expect(claims).toHaveLength(puts.length);
    const statements: number[] = [];
    const record = recordTogether({
      ...repo,
      stored: (records) => {
        statements.push(records.length);
        return repo.stored(records);
      },
    });
    const answered = await Promise.all(
      claims.map((claim) =>
        record({
          claim,
          mover: 'mover-together',
          comment: 'together',
          copy: { ...copyOf(claim), key: objectKeyOf(claim) },
        }),
      ),
    );
    expect(statements).toEqual([1, puts.length - 1]);
    expect(answered.map((transfers) => transfers?.map((t) => t.status))).toEqual(claims.map(() => ['WAIT']));
    for (const claim of claims) {
      const [object] = await s.objectsOf(claim.dataFileId);
      expect(object).toMatchObject({
        key: objectKeyOf(claim),
        size: claim.size,
        dataFileId: claim.dataFileId,
      });
      expect((await s.transfersOf(claim.dataFileId)).map((t) => t.status)).toEqual(['WAIT']);
    }
  });

  it('a retriever claims when half its places are free, several files in one statement', async () => {
    const puts = [];
    for (let i = 0; i < 12; i++) puts.push(await s.put('ONCE_D', { size: 900 + i }));
    const repo = s.h.ports.repos.retrieval;
    const asked: number[] = [];
    const retriever = startRetriever(
      {
        ...s.deps,
        repo: {
          ...repo,
          claim: (mover, leaseMs, limit) => {
            asked.push(limit);
            return repo.claim(mover, leaseMs, limit);
          },
        },
      },
      // Never claimed one by one for want of time: only half the places free makes a claim here.
      { name: 'mover-halves', concurrency: 4, leaseMs: 5000, pollMs: 50, gatherMs: 60_000 },
    );
    try {
      for (const put of puts) await s.eventually(async () => (await s.objectsOf(put.fileId)).length === 1 || undefined);
    } finally {
      await retriever.stop();
    }
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.filter((limit) => limit < 2)).toEqual([]);
  });

  it('a file claimed while a renewal is on its way is not taken for one the renewal lost', async () => {
    const puts = [];
    for (let i = 0; i < 8; i++) puts.push(await s.put('ONCE_D', { size: 700 + i }));
    const repo = s.h.ports.repos.retrieval;
    const slow = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const retriever = startRetriever(
      {
        ...s.deps,
        // Renewals every 100 ms, each answered 250 ms later; each file read for 300 ms: claims land during renewals.
        // The leases written are a minute long, so that none lapses on a busy machine: only the race is left.
        repo: {
          ...repo,
          claim: (mover, _leaseMs, limit) => repo.claim(mover, 60_000, limit),
          renew: async (mover, _leaseMs, held) => {
            await slow(250);
            return repo.renew(mover, 60_000, held);
          },
        },
        sources: {
          open: async (...args) => {
            await slow(300);
            return s.deps.sources.open(...args);
          },
        },
      },
      { name: 'mover-renewing', concurrency: 2, leaseMs: 300, pollMs: 20, gatherMs: 0 },
    );
    try {
      for (const put of puts) await s.eventually(async () => (await s.objectsOf(put.fileId)).length === 1 || undefined);
    } finally {
      await retriever.stop();
    }
    // Each retrieved on its first claim: none aborted as taken away.
    for (const put of puts) {
      const [file] = await s.h.db.select().from(dataFiles).where(eq(dataFiles.id, put.fileId));
      expect(file!.fetchTries, `DataFile ${put.fileId}`).toBe(1);
    }
  });

  it('long retrievals hold a place freed beside them for gatherMs at most', async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = [];
    for (let i = 0; i < 3; i++) slow.push(await s.put('ONCE_D', { size: 500 + i, target: `slow-${i}.bin` }));
    const first = await s.put('ONCE_D', { size: 600, target: 'quick-1.bin' });
    const sources = {
      open: async (source: string, signal: AbortSignal) => {
        if (source.includes('slow-')) await gate;
        return s.deps.sources.open(source, signal);
      },
    };
    const retriever = startRetriever(
      { ...s.deps, sources },
      { name: 'mover-gather', concurrency: 4, leaseMs: 5000, pollMs: 60_000, gatherMs: 50 },
    );
    const stored = async (fileId: number) => (await s.objectsOf(fileId)).length === 1 || undefined;
    try {
      await s.eventually(() => stored(first.fileId));
      // Three places held by long retrievals, one free: the next file is claimed once gatherMs is over.
      const second = await s.put('ONCE_D', { size: 700, target: 'quick-2.bin' });
      retriever.wake();
      await s.eventually(() => stored(second.fileId));
      for (const file of slow) expect(await s.objectsOf(file.fileId)).toEqual([]);
      release();
      for (const file of slow) await s.eventually(() => stored(file.fileId));
    } finally {
      release();
      await retriever.stop();
    }
  });
  it('a stored file wakes the movers once its place is free: the retriever, woken with them, looks once', async () => {
    const put = await s.put('ONCE_D', { size: 800, target: 'woken-once.bin' });
    const repo = s.h.ports.repos.retrieval;
    let claims = 0;
    let wakes = 0;
    let claimsWhenWoken = -1;
    const retriever = startRetriever(
      {
        ...s.deps,
        repo: {
          ...repo,
          claim: (mover, leaseMs, limit) => {
            claims++;
            return repo.claim(mover, leaseMs, limit);
          },
        },
        // As on Node, where the movers' wake-up reaches the retriever beside them.
        ports: {
          ...s.deps.ports,
          wakeMovers: () => {
            wakes++;
            claimsWhenWoken = claims;
            retriever.wake();
          },
        },
      },
      { name: 'mover-woken', concurrency: 2, leaseMs: 5000, pollMs: 60_000 },
    );
    try {
      await s.eventually(async () => (await s.objectsOf(put.fileId)).length === 1 || undefined);
      await s.eventually(async () => claims > claimsWhenWoken || undefined);
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      await retriever.stop();
    }
    expect(wakes).toBe(1);
    expect(claims - claimsWhenWoken).toBe(1);
  });
});
