import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RetrievalRepo } from '../../core/retrieval/ports.ts';
import { startRetriever } from '../../core/retrieval/retriever.ts';
import { dataFiles } from '../../db/schema.ts';
import { type RetrievalScene, retrievalScene } from './support.ts';

/**
 * A put whose process runs a retriever with a free place claims its file for it in the statement that
 * registers it: the retrieval starts as the put commits, with the statuses, history and lease a claim
 * writes; without a free place the file waits in SCHE for a claim, as before.
 */
let s: RetrievalScene;
beforeAll(async () => {
  s = await retrievalScene('put-claims');
  await s.quietDestinations([{ name: 'PUTCLAIM' }]);
});
afterAll(async () => {
  await s?.close();
});

/** A retriever of this process whose sources wait for `open()`, and which counts the files it claimed itself. */
function gatedRetriever(name: string, concurrency: number) {
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const repo = s.h.ports.repos.retrieval;
  let claimedItself = 0;
  const counting: RetrievalRepo = {
    ...repo,
    claim: async (mover, leaseMs, limit) => {
      const claims = await repo.claim(mover, leaseMs, limit);
      claimedItself += claims.length;
      return claims;
    },
  };
  const sources = {
    open: async (source: string, signal: AbortSignal) => {
      await gate;
      return s.deps.sources.open(source, signal);
    },
  };
  const retriever = startRetriever(
    { ...s.deps, repo: counting, sources },
    { name, concurrency, leaseMs: 5000, pollMs: 60_000, gatherMs: 0 },
  );
  const offered = s.h.ports.localRetrievers.add(retriever);
  return {
    retriever,
    open: () => open(),
    claimedItself: () => claimedItself,
    async stop() {
      offered();
      open();
      await retriever.stop();
    },
  };
}

const stored = (fileId: number) => async () => (await s.objectsOf(fileId)).length === 1 || undefined;

describe('a put claims its file for a retriever of its process', () => {
  it('FETC as the put commits, SCHE then FETC in its history, then stored and WAIT', async () => {
    const r = gatedRetriever('mover-put', 2);
    try {
      const put = await s.put('PUTCLAIM', { size: 7000 });
      const [t] = await s.transfersOf(put.fileId);
      expect(t!.status).toBe('FETC');
      const file = await s.fileRow(put.fileId);
      expect([file.fetchMover, file.fetchTries]).toEqual(['mover-put', 1]);
      expect(file.fetchLeaseUntil!.getTime()).toBeGreaterThan(Date.now());
      expect((await s.historyOf(t!.id)).map((h) => [h.status, h.comment])).toEqual([
        ['SCHE', 'Registered by operator'],
        ['FETC', 'Starting retrieval using DataMover=mover-put'],
      ]);
      r.open();
      await s.eventually(stored(put.fileId));
      await s.eventually(s.statusIs(t!.id, 'WAIT'));
      expect((await s.historyOf(t!.id)).map((h) => h.status)).toEqual(['SCHE', 'FETC', 'WAIT']);
      expect(s.h.events.filter((l) => l.startsWith('RET;') && l.includes(`;DataTransferId=${t!.id};`))).toHaveLength(1);
      expect(r.claimedItself()).toBe(0);
    } finally {
      await r.stop();
    }
  });

  it('without a free place, the file waits in SCHE and is claimed once a place frees', async () => {
    const r = gatedRetriever('mover-full', 1);
    try {
      const first = await s.put('PUTCLAIM', { size: 7100 });
      const second = await s.put('PUTCLAIM', { size: 7200 });
      expect((await s.transfersOf(first.fileId))[0]!.status).toBe('FETC');
      expect((await s.transfersOf(second.fileId))[0]!.status).toBe('SCHE');
      r.open();
      await s.eventually(stored(first.fileId));
      await s.eventually(stored(second.fileId));
      expect(r.claimedItself()).toBe(1);
    } finally {
      await r.stop();
    }
  });

  it('a put refused gives its place back to the next', async () => {
    const r = gatedRetriever('mover-refused', 1);
    try {
      const first = await s.put('PUTCLAIM', { size: 7300, target: 'twice.bin' });
      r.open();
      await s.eventually(stored(first.fileId));
      await s.eventually(async () => r.retriever.inFlight() === 0 || undefined);
      // Refused after its place was kept: the same target again, without force.
      const q = new URLSearchParams({ destination: 'PUTCLAIM', source: first.source, target: 'twice.bin' });
      const again = await s.h.call('GET', `/v1/datafile/put?${q}`, { auth: s.admin });
      expect(again.text).toContain('DataFile already exists');
      const next = await s.put('PUTCLAIM', { size: 7400 });
      expect((await s.transfersOf(next.fileId))[0]!.status).not.toBe('SCHE');
      await s.eventually(stored(next.fileId));
      expect(r.claimedItself()).toBe(0);
    } finally {
      await r.stop();
    }
  });

  it('a place taken once its retriever has stopped hands the file back, tried again at once', async () => {
    const r = gatedRetriever('mover-stopped', 1);
    const place = s.h.ports.localRetrievers.reserve();
    expect(place?.mover).toBe('mover-stopped');
    const put = await s.put('PUTCLAIM', { size: 7500 });
    // The place above was the only one: this put found none and left its file to a claim.
    expect((await s.transfersOf(put.fileId))[0]!.status).toBe('SCHE');
    const [claim] = await s.h.ports.repos.retrieval.claim('mover-stopped', 5000, 1);
    expect(claim?.dataFileId).toBe(put.fileId);
    await r.stop();
    place!.take(claim!);
    await s.eventually(s.statusIs((await s.transfersOf(put.fileId))[0]!.id, 'SCHE'));
    const [file] = await s.h.db.select().from(dataFiles).where(eq(dataFiles.id, put.fileId));
    expect(file!.fetchMover).toBeNull();
    const history = await s.historyOf((await s.transfersOf(put.fileId))[0]!.id);
    expect(history.at(-1)!.comment).toContain('Interrupted: DataMover=mover-stopped stopped');
  });
});
