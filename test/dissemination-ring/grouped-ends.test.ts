import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimTransfers } from '../../core/dissemination/claims.ts';
import { groupedConfirms, groupedEnds } from '../../core/dissemination/grouped-ends.ts';
import { changeTransfer } from '../../core/dissemination/manual.ts';
import type { Attempt } from '../../core/dissemination/outcome.ts';
import type { DisseminationHost, DueDestination } from '../../core/dissemination/ports.ts';
import type { Repositories } from '../../core/ports.ts';
import { dataTransfers, destinationState, destinations, transferHistory } from '../../db/schema.ts';
import { restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * A mover's delivered files are ended together (groupedEnds): those that come while a transaction
 * is on its way share the next one. Each still gets exactly its own DONE and history, an attempt
 * an operator changed meanwhile is only released, and a failed transaction fails each of its ends.
 */
let h: Harness;
let admin: string;
let root: string;
let transactions = 0;
let failNext = false;
beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-grouped-')));
  fs.writeFileSync(path.join(root, 'a.grib'), 'grib!');
  h = await createHarness({ sourceRoots: [root] });
  admin = await h.client('operator', ['.*']);
  const transaction = h.ports.repos.transaction.bind(h.ports.repos);
  h.ports.repos.transaction = (<T>(work: (repos: Repositories) => Promise<T>) => {
    transactions++;
    if (failNext) {
      failNext = false;
      return Promise.reject(new Error('the database went away'));
    }
    return transaction(work);
  }) as typeof h.ports.repos.transaction;
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const host: DisseminationHost = {
  hostId: 'H',
  module: 'test',
  host: 'h',
  login: '',
  passwdSealed: null,
  dir: '',
  data: '',
  maxConnections: null,
  retryCount: null,
  retryFrequency: null,
  network: null,
  filterName: null,
};

/** `files` transfers of a started destination, registered and claimed by mover `m`. */
async function claimedAttempts(name: string, files: number): Promise<Attempt[]> {
  await restoreDestination(h, admin, name, [{ method: 'test' }]);
  for (let i = 0; i < files; i++) {
    const query = new URLSearchParams({ destination: name, source: path.join(root, 'a.grib'), target: `f${i}` });
    const put = await h.call('GET', `/v1/datafile/put?${query}`, { auth: admin });
    expect(put.status, put.text).toBe(200);
  }
  const claimed = await claimTransfers(h.ports, {
    destination: name,
    hostId: host.hostId,
    mover: 'm',
    destinationMax: -1,
    hostMax: -1,
    leaseMs: 60_000,
    wanted: files,
  });
  expect(claimed).toHaveLength(files);
  const destination = {
    name,
    hosts: [host],
    retry: { retryCount: 1, retryFrequency: 1000, onHostFailure: 0, resetFrequency: 0 },
  } as unknown as DueDestination;
  return claimed.map((transfer) => ({ mover: 'm', transfer, destination, host, protocol: 'test' }));
}

const delivered = { kind: 'delivered' as const, sent: 5, md5: '5e1ba6d2d9e1a6b1f3a3d8c3c9f2a5b4' };
const transferOf = async (id: number) => (await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id)))[0]!;
const doneRows = async (id: number) =>
  h.db
    .select()
    .from(transferHistory)
    .where(and(eq(transferHistory.transferId, id), eq(transferHistory.status, 'DONE')));

describe('delivered files ended together', () => {
  it('share transactions when they come together, each DONE once with its history and UPH line', async () => {
    const attempts = await claimedAttempts('GROUPED_MANY', 12);
    const end = groupedEnds(h.ports);
    const lines = h.events.length;
    const before = transactions;
    const owned = await Promise.all(attempts.map((attempt) => end({ attempt, result: delivered })));
    expect(owned).toEqual(attempts.map(() => true));
    // The first alone, at once; the eleven that came while it was written, together.
    expect(transactions - before).toBe(2);
    for (const { transfer } of attempts) {
      const row = await transferOf(transfer.id);
      expect([row.status, row.mover, row.sent]).toEqual(['DONE', null, 5]);
      expect(await doneRows(transfer.id)).toHaveLength(1);
    }
    expect(h.events.slice(lines).filter((line) => line.startsWith('UPH'))).toHaveLength(12);
    const [ring] = await h.db.select().from(destinationState).where(eq(destinationState.destination, 'GROUPED_MANY'));
    expect(ring?.lastHostId).toBe('H');
    const [shown] = await h.db.select().from(destinations).where(eq(destinations.name, 'GROUPED_MANY'));
    expect(shown?.schedulerStatus).toBe('WAIT');
  });

  it('only release an attempt an operator stopped meanwhile, and end the others of its group', async () => {
    const attempts = await claimedAttempts('GROUPED_STOPPED', 3);
    await changeTransfer(h.ports, 'operator', attempts[1]!.transfer.id, 'stop');
    const end = groupedEnds(h.ports);
    const owned = await Promise.all(attempts.map((attempt) => end({ attempt, result: delivered })));
    expect(owned).toEqual([true, false, true]);
    const stopped = await transferOf(attempts[1]!.transfer.id);
    expect([stopped.status, stopped.mover]).toEqual(['STOP', null]);
    expect(await doneRows(stopped.id)).toHaveLength(0);
    for (const i of [0, 2]) expect((await transferOf(attempts[i]!.transfer.id)).status).toBe('DONE');
  });

  it('end the files of several destinations in one transaction, each ring told', async () => {
    const first = await claimedAttempts('GROUPED_A', 2);
    const second = await claimedAttempts('GROUPED_B', 2);
    const end = groupedEnds(h.ports);
    const owned = await Promise.all([...second, ...first].map((attempt) => end({ attempt, result: delivered })));
    expect(owned).toEqual([true, true, true, true]);
    for (const name of ['GROUPED_A', 'GROUPED_B']) {
      const [ring] = await h.db.select().from(destinationState).where(eq(destinationState.destination, name));
      expect(ring?.lastSuccessAt).not.toBeNull();
    }
  });

  it('fail every end of a transaction that failed, and write them when tried again', async () => {
    const attempts = await claimedAttempts('GROUPED_FAILED', 3);
    const end = groupedEnds(h.ports);
    failNext = true;
    const first = await Promise.allSettled(attempts.map((attempt) => end({ attempt, result: delivered })));
    // The first went alone into the failed transaction; the two behind it were written by the next.
    expect(first.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect((await transferOf(attempts[0]!.transfer.id)).status).toBe('EXEC');
    expect(await end({ attempt: attempts[0]!, result: delivered })).toBe(true);
    for (const { transfer } of attempts) expect(await doneRows(transfer.id)).toHaveLength(1);
  });

  it("confirm attempts together before their renames: each told whether it is still the mover's", async () => {
    const attempts = await claimedAttempts('GROUPED_CONFIRMS', 4);
    await changeTransfer(h.ports, 'operator', attempts[2]!.transfer.id, 'stop');
    const confirm = groupedConfirms(h.ports, 'm', 60_000);
    const kept = await Promise.all(attempts.map(({ transfer }) => confirm(transfer)));
    expect(kept).toEqual([true, true, false, true]);
    expect(await confirm({ id: attempts[0]!.transfer.id, attempt: attempts[0]!.transfer.attempt + 1 })).toBe(false);
  });
});
