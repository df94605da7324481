import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changeTransfer } from '../../core/dissemination/manual.ts';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { dataTransfers, transferHistory } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { type SlowProxy, startSlowProxy } from '../support/servers/slow-proxy.ts';
import { mostOpenAtOnce, type Sshd, sshdMissing, startSshd } from '../support/servers/sshd.ts';

/**
 * The engine's promises measured at a real OpenSSH server, whose sftp-server logs every file it
 * opens and closes: a host's limit across the destinations sharing it, one writer per file when an
 * operator changes a transfer while it is being sent over a slow link, and the end of a stalled send.
 */
const noSshd = sshdMissing();

let h: Harness;
let admin: string;
let sources: string;
let sshd: Sshd;
let slow: SlowProxy;
let mover: Mover;

beforeAll(async () => {
  if (noSshd) return;
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-one-writer-')));
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('operator', ['.*']);
  sshd = await startSshd({ logFiles: true });
  slow = await startSlowProxy(sshd.port);
  mover = startMover(
    {
      ports: h.ports,
      methods: nodeTransferMethods({ fileRoots: [] }),
      sources: nodeSourceReader({ roots: [sources], hosts: [] }),
    },
    { name: 'one-writer', concurrency: 8, leaseMs: 3000, heartbeatMs: 200, pollMs: 40 },
  );
});
afterAll(async () => {
  await mover?.stop(5000);
  await slow?.stop();
  await sshd?.stop();
  await h?.close();
  if (sources) fs.rmSync(sources, { recursive: true, force: true });
});

const md5 = (bytes: Buffer) => createHash('md5').update(bytes).digest('hex');
let files = 0;
async function put(destination: string, bytes: number, over: { target?: string; force?: boolean } = {}) {
  const content = randomBytes(bytes);
  const target = over.target ?? `f${++files}.bin`;
  const file = path.join(sources, `${destination}-${target}`);
  fs.writeFileSync(file, content);
  const q = new URLSearchParams({ destination, source: file, target, ...(over.force && { force: 'true' }) });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return { id: t!.id, target, md5: md5(content) };
}
const transfer = async (id: number) => (await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id)))[0]!;
const statusIs =
  (id: number, status: string, attempt = 0) =>
  async () => {
    const t = await transfer(id);
    return t.status === status && t.attempt >= attempt ? t : undefined;
  };
const historyOf = async (id: number) =>
  (await h.db.select().from(transferHistory).where(eq(transferHistory.transferId, id))).map((r) => r.status);
const host = (dir: string, port: number, over: Record<string, unknown> = {}) => ({
  method: 'sftp' as const,
  host: `127.0.0.1:${port}`,
  login: sshd.user,
  passwd: sshd.password,
  dir,
  ...over,
});

describe.skipIf(noSshd !== null)(`at a real sshd ${noSshd ?? ''}`, () => {
  it('bounds the files written at once to a host by its maxConnections, across the destinations sharing it', async () => {
    const dir = sshd.scratch('shared-');
    const shared = host(dir, sshd.port, { nickname: 'shared-sshd', maxConnections: 1 });
    await restoreDestination(h, admin, 'SHARED_A', [shared]);
    await restoreDestination(h, admin, 'SHARED_B', [shared]);
    const hosts = await h.call('GET', '/v1/destination/backup/SHARED_B', { auth: admin });
    const hostOf = (r: typeof hosts) => r.json.backup.destinations[0].associations[0].host.hostid;
    expect(hostOf(hosts)).toBe(hostOf(await h.call('GET', '/v1/destination/backup/SHARED_A', { auth: admin })));

    const sent = [];
    for (let i = 0; i < 6; i++) sent.push(await put(i % 2 ? 'SHARED_A' : 'SHARED_B', 300_000));
    for (const s of sent) await eventually(statusIs(s.id, 'DONE'), 30_000, `DONE ${s.target}`);
    for (const s of sent) expect(md5(fs.readFileSync(path.join(dir, s.target)))).toBe(s.md5);
    const spans = sshd.openWrites().filter((s) => s.path.startsWith(dir));
    expect(spans.length).toBeGreaterThanOrEqual(6);
    expect(mostOpenAtOnce(spans)).toBe(1);
  });

  const duringSlowSend = async (
    name: string,
    change: (sent: { id: number; target: string }) => Promise<{ md5: string }>,
  ) => {
    const dir = sshd.scratch(`${name.toLowerCase()}-`);
    slow.rate = 1_000_000;
    await restoreDestination(h, admin, name, [host(dir, slow.port, { maxConnections: 4 })]);
    const first = await put(name, 2_500_000);
    await eventually(statusIs(first.id, 'EXEC'), 10_000, 'EXEC');
    const from = slow.passed();
    await eventually(async () => (slow.passed() - from > 300_000 ? true : undefined), 10_000, 'bytes on the way');
    const expected = await change(first);
    const ended = await eventually(statusIs(first.id, 'DONE', 2), 30_000, 'DONE by a later attempt');
    slow.rate = Number.POSITIVE_INFINITY;

    expect(md5(fs.readFileSync(path.join(dir, first.target)))).toBe(expected.md5);
    expect(fs.readdirSync(dir)).toEqual([first.target]);
    const history = await historyOf(first.id);
    expect(history).toContain('INTR');
    expect(history.filter((s) => s === 'DONE')).toHaveLength(1);
    const spans = sshd.openWrites().filter((s) => s.path.startsWith(dir));
    expect(spans.length).toBeGreaterThanOrEqual(2);
    expect(mostOpenAtOnce(spans)).toBe(1);
    return ended;
  };

  it('a forced put during a send ends that attempt before the file is sent again: one writer, the new bytes', async () => {
    await duringSlowSend('FORCED', async (sent) => {
      const again = await put('FORCED', 1_200_000, { target: sent.target, force: true });
      expect(again.id).toBe(sent.id);
      return again;
    });
  });

  it('a hold then a requeue during a send: one writer, and the file arrives whole', async () => {
    let expected = '';
    await duringSlowSend('HELD', async (sent) => {
      expected = md5(fs.readFileSync(path.join(sources, `HELD-${sent.target}`)));
      await changeTransfer(h.ports, 'test', sent.id, 'hold');
      await changeTransfer(h.ports, 'test', sent.id, 'requeue');
      return { md5: expected };
    });
  });

  it('a link that stalls mid-send ends the attempt after ectrans.streamTimeout, as a host failure', async () => {
    const dir = sshd.scratch('stalled-');
    const data = 'ectrans.streamTimeout = "3s"';
    await restoreDestination(h, admin, 'STALLED', [host(dir, slow.port, { data, retryFrequency: 500 })]);
    slow.rate = Number.POSITIVE_INFINITY;
    slow.stallAfterBytes = slow.passed() + 1024 * 1024;
    try {
      const sent = await put('STALLED', 4_000_000);
      await eventually(statusIs(sent.id, 'EXEC'), 10_000, 'EXEC');
      const failed = await eventually(statusIs(sent.id, 'RETR'), 15_000, 'out of EXEC');
      expect(failed.message).toMatch(/^Stalled: no byte moved for 3 s/);
      expect(await historyOf(sent.id)).toContain('STOP');
      // The stalled session could not remove its temporary file: the next attempt does.
      slow.stallAfterBytes = Number.POSITIVE_INFINITY;
      await eventually(statusIs(sent.id, 'DONE', 2), 20_000, 'DONE by the next attempt');
      expect(md5(fs.readFileSync(path.join(dir, sent.target)))).toBe(sent.md5);
      expect(fs.readdirSync(dir)).toEqual([sent.target]);
    } finally {
      slow.stallAfterBytes = Number.POSITIVE_INFINITY;
    }
  });
});
