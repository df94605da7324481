import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TransferMethod } from '../../core/dissemination/methods.ts';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { dataTransfers, transferHistory } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { fileMethod } from '../../functions/transfer-methods/file.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * A mover paused right after asking the database whether its attempt still owns the transfer, and
 * before taking up the answer: by the time it resumes the lease that answer renewed may have
 * lapsed, and another mover may be sending the file. The rename into place must not follow.
 */
const LEASE_MS = 1500;
let h: Harness;
let admin: string;
let sources: string;
let delivered: string;
let mover: Mover | undefined;

beforeAll(async () => {
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-late-confirm-src-')));
  delivered = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-late-confirm-dst-')));
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('operator', ['.*']);
});
afterAll(async () => {
  await mover?.stop(2000);
  await h.close();
  fs.rmSync(sources, { recursive: true, force: true });
  fs.rmSync(delivered, { recursive: true, force: true });
});

/** The whole process stops, timers and answers alike, as under SIGSTOP. */
const pauseProcess = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** The file method, whose first attempt's process pauses once its ownership question is on its way. */
function pausedAtFirstConfirm() {
  const inner = fileMethod([delivered]);
  const renamedBy: number[] = [];
  let paused = false;
  const method: TransferMethod = {
    async send(host, file, source, signal) {
      const fence = file.attempt!;
      const attempt = Number(fence.tag.split('-').at(-1));
      const confirm = async () => {
        const answered = fence.confirm();
        if (!paused) {
          paused = true;
          pauseProcess(LEASE_MS);
        }
        await answered;
        renamedBy.push(attempt);
      };
      return inner.send(host, { ...file, attempt: { ...fence, confirm } }, source, signal);
    },
    close: () => inner.close(),
  };
  return { method, renamedBy };
}

describe('an attempt whose ownership is confirmed', () => {
  it('does not rename into place on an answer taken up after most of its lease, and the next attempt delivers', async () => {
    const dir = path.join(delivered, 'LATE');
    await restoreDestination(h, admin, 'LATE', [{ method: 'file', dir }]);
    const paused = pausedAtFirstConfirm();
    mover = startMover(
      {
        ports: h.ports,
        methods: { file: paused.method },
        sources: nodeSourceReader({ roots: [sources], hosts: [] }),
      },
      { name: 'paused', concurrency: 1, leaseMs: LEASE_MS, heartbeatMs: 150, pollMs: 40 },
    );
    const content = randomBytes(50_000);
    const source = path.join(sources, 'late.bin');
    fs.writeFileSync(source, content);
    const q = new URLSearchParams({ destination: 'LATE', source, target: 'late.bin' });
    const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
    expect(r.status, r.text).toBe(200);
    const [transfer] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
    const id = transfer!.id;

    await eventually(
      async () => {
        const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id));
        return t!.status === 'DONE' ? true : undefined;
      },
      15_000,
      'DONE',
    );
    const history = await h.db
      .select({ status: transferHistory.status, comment: transferHistory.comment })
      .from(transferHistory)
      .where(eq(transferHistory.transferId, id))
      .orderBy(asc(transferHistory.id));
    // The lease lapsed during the pause: the first attempt ended, by the reclaim of a lost mover's
    // attempts (this one's, as any other mover's) or by its own stop, whichever came first.
    const first = history.slice(1, 4).map((row) => `${row.status} ${row.comment}`);
    expect(first[0]).toBe('EXEC Claimed by paused');
    expect([
      'INTR Interrupted: lost DataMover paused',
      `STOP Transfer ${id}: the lease of paused could not be renewed in time`,
    ]).toContain(first[1]);
    expect(first[2]).toMatch(/^RETR /);
    expect(history.slice(4).map((row) => row.status)).toEqual(['EXEC', 'DONE']);
    // Only the second attempt got past its confirmation to the rename.
    expect(paused.renamedBy).toEqual([2]);
    const arrived = fs.readFileSync(path.join(dir, 'late.bin'));
    expect(createHash('md5').update(arrived).digest('hex')).toBe(createHash('md5').update(content).digest('hex'));
    expect(fs.readdirSync(dir)).toEqual(['late.bin']);
  });
});
