import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Mover, startMover } from '../core/dissemination/mover.ts';
import { dataTransfers, transferHistory } from '../db/schema.ts';
import { nodeSourceReader } from '../functions/node/sources.ts';
import { nodeTransferMethods } from '../functions/transfer-methods/index.ts';
import { eventually, restoreDestination } from './support/engine.ts';
import { createHarness, type Harness } from './support/harness.ts';
import { freePort } from './support/processes.ts';
import { type Proftpd, proftpdAvailability, startProftpd } from './support/servers/proftpd.ts';

/**
 * Puts through the API, delivered by a mover with the Node transfer methods to real servers
 * started here; on the suite's database (PGlite, or Postgres with TEST_DATABASE_URL).
 */
const ftpAvailable = proftpdAvailability();
let h: Harness;
let admin: string;
let sources: string;
let ftp: Proftpd | undefined;
let mover: Mover;

beforeAll(async () => {
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-servers-src-')));
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('operator', ['.*']);
  if (ftpAvailable.run) ftp = await startProftpd();
  mover = startMover(
    {
      ports: h.ports,
      methods: nodeTransferMethods({ fileRoots: [] }),
      sources: nodeSourceReader({ roots: [sources], hosts: [] }),
    },
    { name: 'servers', concurrency: 8, leaseMs: 5000, heartbeatMs: 500, pollMs: 40 },
  );
});
afterAll(async () => {
  await mover?.stop(5000);
  await ftp?.stop();
  await h.close();
  fs.rmSync(sources, { recursive: true, force: true });
});

let files = 0;
async function put(destination: string, bytes: number) {
  const content = randomBytes(bytes);
  const file = path.join(sources, `s${++files}.bin`);
  fs.writeFileSync(file, content);
  const q = new URLSearchParams({ destination, source: file, target: `day/${files}.bin` });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return { id: t!.id, target: t!.target, md5: createHash('md5').update(content).digest('hex') };
}
const done = (id: number) => async () => {
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id));
  return t!.status === 'DONE' ? t : undefined;
};
const md5Of = (file: string) => createHash('md5').update(fs.readFileSync(file)).digest('hex');

describe.skipIf(!ftpAvailable.run)(`FTP to ProFTPD ${ftpAvailable.reason}`, () => {
  const ftpHost = (over: Record<string, unknown> = {}) => ({
    method: 'ftp' as const,
    host: `127.0.0.1:${ftp!.port}`,
    login: ftp!.user,
    passwd: ftp!.password,
    dir: 'incoming',
    ...over,
  });

  it('delivers a put: the bytes and MD5 arrive under <dir>/<target>, with no temporary file left', async () => {
    await restoreDestination(h, admin, 'FTP_E2E', [ftpHost()]);
    const sent = await put('FTP_E2E', 1_500_000);
    await eventually(done(sent.id), 20_000, 'DONE over FTP');
    const arrived = path.join(ftp!.root, 'incoming', sent.target);
    expect(md5Of(arrived)).toBe(sent.md5);
    expect(fs.readdirSync(path.dirname(arrived)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    const shown = await h.call('GET', '/v1/destination/FTP_E2E', { auth: admin });
    expect(shown.json.destination.statusCode).toBe('WAIT');
  });

  it('fails over to the backup host when the primary refuses connections', async () => {
    const closed = await freePort();
    await restoreDestination(h, admin, 'FTP_FAILOVER', [
      ftpHost({ host: `127.0.0.1:${closed}`, retryCount: 0, retryFrequency: 50, dir: 'primary' }),
      ftpHost({ dir: 'backup' }),
    ]);
    const sent = await put('FTP_FAILOVER', 10_000);
    await eventually(done(sent.id), 20_000, 'DONE on the backup');
    expect(md5Of(path.join(ftp!.root, 'backup', sent.target))).toBe(sent.md5);
    const history = await h.db.select().from(transferHistory).where(eq(transferHistory.transferId, sent.id));
    const refused = history.find((r) => r.status === 'STOP');
    expect(refused?.comment).toMatch(/Connection to 127\.0\.0\.1:\d+ failed/);
    expect(refused?.comment).not.toContain(ftp!.password);
  });
});
