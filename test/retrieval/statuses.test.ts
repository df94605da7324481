import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fieldsOf, type RetrievalScene, retrievalScene } from './support.ts';

/** A retrieval as the operator follows it: the transfers' statuses, their history, the RET and ERR lines. */
let s: RetrievalScene;
beforeAll(async () => {
  s = await retrievalScene('statuses');
  await s.quietDestinations([{ name: 'RETSTAT' }]);
});
afterAll(async () => {
  await s?.close();
});

const linesOf = (kind: string, transferId: number) =>
  s.h.events.filter((l) => l.startsWith(`${kind};`) && l.includes(`;DataTransferId=${transferId};`));

describe('a retrieval, step by step', () => {
  it('goes SCHE → FETC → WAIT, HOLD for a standby put, with history and a RET line each', async () => {
    const queued = await s.put('RETSTAT', { size: 5000 });
    const standby = await s.put('RETSTAT', { size: 6000, standby: true });
    const [q] = await s.transfersOf(queued.fileId);
    const [st] = await s.transfersOf(standby.fileId);
    expect([q!.status, st!.status]).toEqual(['SCHE', 'SCHE']);

    const { claims, outcomes } = await s.retrieveDue('mover-a');
    expect(claims.map((c) => c.dataFileId).sort()).toEqual([queued.fileId, standby.fileId].sort());
    expect(outcomes).toEqual(['stored', 'stored']);
    const [q2] = await s.transfersOf(queued.fileId);
    const [st2] = await s.transfersOf(standby.fileId);
    expect([q2!.status, st2!.status]).toEqual(['WAIT', 'HOLD']);

    const history = (await s.historyOf(q!.id)).map((r) => [r.status, r.comment, r.error]);
    expect(history.map((r) => r[0])).toEqual(['SCHE', 'FETC', 'WAIT']);
    expect(history[1]).toEqual(['FETC', 'Starting retrieval using DataMover=mover-a', false]);
    expect(history[2]![1]).toMatch(/^Retrieved by DataMover=mover-a \(5000 bytes in \d+ ms\)$/);
    expect((await s.historyOf(st!.id)).map((r) => r.status)).toEqual(['SCHE', 'FETC', 'HOLD']);
    const [ret] = linesOf('RET', q!.id);
    expect(linesOf('RET', q!.id)).toHaveLength(1);
    const fields = fieldsOf(ret!);
    expect(fields.map(([k]) => k)).toEqual([
      'TimeStamp',
      'DataTransferId',
      'DestinationName',
      'DestinationType',
      'FileName',
      'FileSize',
      'Identity',
      'ScheduledTime',
      'StartTime',
      'Duration',
      'MoverName',
      'StandBy',
    ]);
    const f = Object.fromEntries(fields);
    expect(f).toMatchObject({
      DataTransferId: String(q!.id),
      DestinationName: 'RETSTAT',
      FileName: queued.target,
      FileSize: '5000',
      Identity: queued.target,
      ScheduledTime: String(q!.scheduledAt.getTime()),
      MoverName: 'mover-a',
      StandBy: 'false',
    });
    expect(Number(f.TimeStamp)).toBe(Number(f.StartTime) + Number(f.Duration));
    expect(Object.fromEntries(fieldsOf(linesOf('RET', st!.id)[0]!)).StandBy).toBe('true');
  });

  it('a size other than the registered one fails: ERR line, back to SCHE, retried at once, then after 30 s', async () => {
    const put = await s.put('RETSTAT', { size: 4000 });
    fs.writeFileSync(put.source, Buffer.alloc(4100, 1));
    const [t] = await s.transfersOf(put.fileId);

    for (let attempt = 1; attempt <= 3; attempt++) {
      const { claims, outcomes } = await s.retrieveDue('mover-b');
      expect(claims.map((c) => [c.dataFileId, c.tries])).toEqual([[put.fileId, attempt]]);
      expect(outcomes).toEqual(['failed']);
      const [now] = await s.transfersOf(put.fileId);
      expect(now!.status).toBe('SCHE');
      expect(now!.message).toMatch(/^Retrieval failed on DataMover=mover-b - Incorrect size: 4100 .*4000 registered$/);
      const wait = await s.fetchInMs(put.fileId);
      if (attempt < 3) expect(wait!).toBeLessThanOrEqual(0);
      else {
        expect(wait!).toBeGreaterThan(25_000);
        expect(wait!).toBeLessThanOrEqual(30_000);
      }
    }
    // Not due again before its 30 s.
    expect((await s.retrieveDue('mover-b')).claims).toEqual([]);

    const history = await s.historyOf(t!.id);
    expect(history.map((r) => r.status)).toEqual(['SCHE', 'FETC', 'SCHE', 'FETC', 'SCHE', 'FETC', 'SCHE']);
    const failures = history.filter((r) => r.error);
    expect(failures).toHaveLength(3);
    for (const r of failures) expect(r.comment).toContain('Incorrect size');
    const errs = linesOf('ERR', t!.id);
    expect(errs).toHaveLength(3);
    const f = Object.fromEntries(fieldsOf(errs[0]!));
    expect(f).toMatchObject({
      DestinationName: 'RETSTAT',
      FileName: put.target,
      FileSize: '4000',
      TransferServer: 'mover-b',
    });
    expect(f.Message).toContain('Incorrect size');
    expect(linesOf('RET', t!.id)).toEqual([]);
    expect(await s.objectsOf(put.fileId)).toEqual([]);
    expect((await s.fileRow(put.fileId)).objectKey).toBeNull();
    expect(s.storeFiles().filter((k) => k.includes(`/${put.fileId}-`))).toEqual([]);
  });
});
