import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Mover, startMover } from '../core/dissemination/mover.ts';
import { setDestinationStatus } from '../core/dissemination/operator.ts';
import { dataTransfers, transferHistory } from '../db/schema.ts';
import { nodeSourceReader } from '../functions/node/sources.ts';
import { nodeTransferMethods } from '../functions/transfer-methods/index.ts';
import { eventually, restoreDestination } from './support/engine.ts';
import { createHarness, type Harness } from './support/harness.ts';
import { freePort } from './support/processes.ts';
import { type HttpSink, startHttpSink } from './support/servers/http-sink.ts';
import { type Proftpd, proftpdAvailability, startProftpd } from './support/servers/proftpd.ts';
import { type S3TestServer, s3TestHost, startS3 } from './support/servers/s3.ts';
import { type Sshd, sshdMissing, startSshd } from './support/servers/sshd.ts';

/**
 * Puts through the API, delivered by a mover with the Node transfer methods to real servers
 * started here; on the suite's database (PGlite, or Postgres with TEST_DATABASE_URL).
 */
const ftpAvailable = proftpdAvailability();
const noSshd = sshdMissing();
let h: Harness;
let admin: string;
let sources: string;
let ftp: Proftpd | undefined;
let sshd: Sshd | undefined;
let s3: S3TestServer;
let sink: HttpSink;
let mover: Mover;

beforeAll(async () => {
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-servers-src-')));
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('operator', ['.*']);
  if (ftpAvailable.run) ftp = await startProftpd();
  if (!noSshd) sshd = await startSshd();
  s3 = await startS3('ecpds-bucket');
  sink = await startHttpSink({ auth: { user: 'pusher', password: 'sink-secret' } });
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
  await sshd?.stop();
  await s3?.stop();
  await sink?.stop();
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

describe.skipIf(noSshd !== null)(`SFTP to OpenSSH ${noSshd ?? ''}`, () => {
  const sftpHost = (dir: string, over: Record<string, unknown> = {}) => ({
    method: 'sftp' as const,
    host: `127.0.0.1:${sshd!.port}`,
    login: sshd!.user,
    passwd: sshd!.password,
    dir,
    ...over,
  });

  it('delivers a put with the sealed password: bytes and MD5, no temporary file, history, statusCode', async () => {
    const dir = sshd!.scratch('e2e-');
    await restoreDestination(h, admin, 'SFTP_E2E', [sftpHost(dir)]);
    const sent = await put('SFTP_E2E', 2_000_000);
    await eventually(done(sent.id), 20_000, 'DONE over SFTP');
    const arrived = path.join(dir, sent.target);
    expect(md5Of(arrived)).toBe(sent.md5);
    expect(fs.readdirSync(path.dirname(arrived)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    const history = await h.db.select().from(transferHistory).where(eq(transferHistory.transferId, sent.id));
    expect(history.map((r) => r.status)).toEqual(['WAIT', 'EXEC', 'DONE']);
    expect(history.at(-1)!.comment).toMatch(/^Sent 2000000 bytes from DataMover=servers to 127\.0\.0\.1:\d+ at day\//);
    const shown = await h.call('GET', '/v1/destination/SFTP_E2E', { auth: admin });
    expect(shown.json.destination.statusCode).toBe('WAIT');
  });

  it("runs the operators' guide's worked example: an SFTP destination restored, started, a put arriving", async () => {
    const guide = fs.readFileSync(path.join(import.meta.dirname, '..', 'docs', 'operators.md'), 'utf8');
    const json = /cat > sftp-dest\.json <<'JSON'\n([\s\S]*?)\nJSON\n/.exec(guide)![1]!;
    const dir = sshd!.scratch('guide-');
    // The example's host, login and password are the operator's own: here, the test sshd's.
    const body = JSON.parse(
      json
        .replace('sftp.lab.example.org:22', `127.0.0.1:${sshd!.port}`)
        .replace('"login": "ecpds"', `"login": "${sshd!.user}"`)
        .replace('"passwd": "s3cret"', `"passwd": "${sshd!.password}"`)
        .replace('"dir": "incoming"', `"dir": "${dir}"`),
    );
    const restored = await h.call('PUT', '/v1/destination/backup', { auth: admin, body });
    expect(restored.status, restored.text).toBe(200);
    expect(guide).toContain('npx ecpds-edge destination start LAB_SFTP');
    await setDestinationStatus(h.ports, 'cli', 'LAB_SFTP', 'start');
    const sent = await put('LAB_SFTP', 50_000);
    await eventually(done(sent.id), 20_000, 'DONE');
    expect(md5Of(path.join(dir, sent.target))).toBe(sent.md5);
  });

  it('with maxConnections=1 sends 50 files over one session, never a second', async () => {
    const dir = sshd!.scratch('one-');
    await restoreDestination(h, admin, 'SFTP_ONE', [sftpHost(dir, { maxConnections: 1 })], {
      destination: { maxConnections: 1 },
    });
    const before = sshd!.accepted();
    const sent = [];
    for (let i = 0; i < 50; i++) sent.push(await put('SFTP_ONE', 4096));
    for (const s of sent) await eventually(done(s.id), 30_000, `DONE ${s.id}`);
    for (const s of sent) expect(md5Of(path.join(dir, s.target))).toBe(s.md5);
    // One login at most: the session may also be the idle one an earlier send to this host left open.
    expect(sshd!.accepted() - before).toBeLessThanOrEqual(1);
  });

  it('a host option set with POST /v1/host/option applies from the next attempt on', async () => {
    const dir = sshd!.scratch('option-');
    // Retries a second apart: five failures in a row would put the destination on HOLD before the option is back.
    await restoreDestination(h, admin, 'SFTP_OPTION', [sftpHost(dir, { retryCount: 5, retryFrequency: 1000 })]);
    const [association] = (await h.call('GET', '/v1/destination/backup/SFTP_OPTION', { auth: admin })).json.backup
      .destinations[0].associations;
    const hostid = association.host.hostid;
    // A port where nothing listens: the next attempt fails; set back, the one after delivers.
    const closed = await freePort();
    const option = (value: string) =>
      h.call('POST', `/v1/host/option?hostid=${hostid}&name=sftp.port`, { auth: admin, form: { value } });
    await h.call('POST', `/v1/host/option?hostid=${hostid}&name=ectrans.connectTimeOut`, {
      auth: admin,
      form: { value: '2s' },
    });
    expect((await option(String(closed))).status).toBe(200);
    await h.db.execute(sql`update hosts set host = '127.0.0.1' where hostid = ${hostid}`);
    const sent = await put('SFTP_OPTION', 1000);
    await eventually(
      async () => {
        const history = await h.db.select().from(transferHistory).where(eq(transferHistory.transferId, sent.id));
        return history.some((r) => r.status === 'STOP') ? true : undefined;
      },
      20_000,
      'a failed attempt',
    );
    expect((await option(String(sshd!.port))).status).toBe(200);
    await eventually(done(sent.id), 20_000, 'DONE once the option is back');
    expect(md5Of(path.join(dir, sent.target))).toBe(sent.md5);
  });
});

describe('S3 and HTTP', () => {
  it('delivers a put to an S3-compatible server as one object, bytes and MD5 equal', async () => {
    await restoreDestination(h, admin, 'S3_E2E', [s3TestHost(s3, 'products')]);
    const sent = await put('S3_E2E', 300_000);
    await eventually(done(sent.id), 20_000, 'DONE to S3');
    const object = await s3.object(`products/${sent.target}`);
    expect(object && createHash('md5').update(object).digest('hex')).toBe(sent.md5);
  });

  it('delivers a put by HTTP PUT with Basic authentication', async () => {
    const url = new URL(sink.url);
    await restoreDestination(h, admin, 'HTTP_E2E', [
      { method: 'http', host: url.host, login: 'pusher', passwd: 'sink-secret', dir: 'drop' },
    ]);
    const sent = await put('HTTP_E2E', 100_000);
    await eventually(done(sent.id), 20_000, 'DONE by HTTP');
    const stored = sink.file(`drop/${sent.target}`);
    expect(stored && createHash('md5').update(stored).digest('hex')).toBe(sent.md5);
  });
});
