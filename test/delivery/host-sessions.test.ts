import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { dataTransfers } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { mostOpenAtOnce, type Sshd, sshdMissing, startSshd } from '../support/servers/sshd.ts';

/**
 * A host's maxConnections as its server sees it, with two movers sending to it: each keeps the
 * sessions of its sends open for a while, to reuse them, and the other must count those. The
 * server's sftp-server logs every session it serves, with its pid: the sessions alive at once are
 * read from there.
 */
const noSshd = sshdMissing();

let h: Harness;
let admin: string;
let sources: string;
let sshd: Sshd;
const movers: Mover[] = [];

beforeAll(async () => {
  if (noSshd) return;
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-host-sessions-')));
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('operator', ['.*']);
  sshd = await startSshd({ logFiles: true });
  for (const name of ['sessions-a', 'sessions-b']) {
    const deps = {
      ports: h.ports,
      methods: nodeTransferMethods({ fileRoots: [] }),
      sources: nodeSourceReader({ roots: [sources], hosts: [] }),
    };
    movers.push(startMover(deps, { name, concurrency: 4, leaseMs: 3000, heartbeatMs: 200, pollMs: 30 }));
  }
});
afterAll(async () => {
  await Promise.all(movers.map((m) => m.stop(5000)));
  await sshd?.stop();
  await h?.close();
  if (sources) fs.rmSync(sources, { recursive: true, force: true });
});

const md5 = (bytes: Buffer) => createHash('md5').update(bytes).digest('hex');
let files = 0;
async function put(destination: string, bytes: number) {
  const content = randomBytes(bytes);
  const target = `f${++files}.bin`;
  const file = path.join(sources, target);
  fs.writeFileSync(file, content);
  const q = new URLSearchParams({ destination, source: file, target });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return { id: t!.id, target, md5: md5(content) };
}
const isDone = (id: number) => async () => {
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id));
  return t?.status === 'DONE' ? t : undefined;
};

describe.skipIf(noSshd !== null)(`two movers at a real sshd ${noSshd ?? ''}`, () => {
  it('never let the server see more sessions than maxConnections, idle ones kept for reuse included', async () => {
    const dir = sshd.scratch('sessions-');
    const shared = {
      method: 'sftp' as const,
      host: `127.0.0.1:${sshd.port}`,
      login: sshd.user,
      passwd: sshd.password,
      dir,
      nickname: 'sessions-sshd',
      maxConnections: 2,
    };
    const destinations = ['SESSIONS_A', 'SESSIONS_B', 'SESSIONS_C'];
    for (const name of destinations) await restoreDestination(h, admin, name, [shared]);

    // Waves of files. Most pauses between them are shorter than a session's idle time: the next
    // wave finds the sessions of the one before still open, held by either mover. Some are longer:
    // every session closes, and the movers race for the host again. Which mover sends is theirs to
    // settle: one whose sessions stay busy may take every file while the other waits.
    const sent = [];
    for (let wave = 0; wave < 6; wave++) {
      const batch = [];
      for (let i = 0; i < 6; i++) batch.push(await put(destinations[i % destinations.length]!, 50_000));
      for (const s of batch) await eventually(isDone(s.id), 30_000, `DONE ${s.target}`);
      sent.push(...batch);
      await new Promise((resolve) => setTimeout(resolve, wave % 3 === 2 ? 3_000 : 600));
    }

    for (const s of sent) expect(md5(fs.readFileSync(path.join(dir, s.target)))).toBe(s.md5);
    const sessions = sshd.sessions();
    // Sessions were kept and reused: far fewer than files.
    expect(sessions.length).toBeGreaterThan(0);
    expect(sessions.length).toBeLessThan(sent.length);
    expect(mostOpenAtOnce(sessions)).toBeLessThanOrEqual(2);
  });
});
