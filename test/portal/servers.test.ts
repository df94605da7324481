import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { DbHandle } from '../../db/client.ts';
import { migrate } from '../../db/migrate.ts';
import { openPglite } from '../../db/pglite.ts';
import { dataFiles, dataTransfers, transferHistory } from '../../db/schema.ts';
import { freshPostgres } from '../support/database.ts';
import { eventually } from '../support/engine.ts';
import { basic, createHarness, type Harness } from '../support/harness.ts';
import { freePort, killAll, removeTempDirs, type ServerProcess, startServer, tempDir } from '../support/processes.ts';
import { needs } from '../support/tools.ts';
import { bytesOf, eventFields, incomingUser, md5, putFile, tool } from './support.ts';

/**
 * The portal in `ecpds-edge serve` as operators run it: its configuration (the upload directory,
 * a source root), its event log; and two servers on one Postgres counting a user's transfers
 * together.
 */
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });
afterAll(async () => {
  await killAll();
  removeTempDirs();
});

const postgres = process.env.TEST_DATABASE_URL;
const key = randomBytes(32);

/** A harness on a database that servers will use next, for the scene they serve. */
const seeding = (database: DbHandle, sources: string) =>
  createHarness({ database, secretKey: new Uint8Array(key), sourceRoots: [sources] });

const serve = async (env: Record<string, string>) => {
  const server = startServer({ PORT: String(await freePort()), ECPDS_SECRET_KEY: key.toString('base64'), ...env });
  const url = await server.ready.catch((e: unknown) => {
    throw new Error(`server did not start: ${String(e)}`);
  });
  return { server, url };
};
const eventsIn = (file: string, kind: string) =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith(`${kind};`))
        .map(eventFields)
    : [];

describe.skipIf(postgres)('ecpds-edge serve on its embedded database', () => {
  it(
    'serves downloads and takes uploads into its data directory, written to its event log',
    needs('curl'),
    async () => {
      const dir = tempDir('ecpds-portal-serve-');
      const dataDir = path.join(dir, 'data');
      const outgoing = path.join(dataDir, 'outgoing');
      fs.mkdirSync(outgoing, { recursive: true });
      const handle = await openPglite(path.join(dataDir, 'pgdata'));
      await migrate(handle);
      const h = await seeding(handle, outgoing);
      await h.addDestination('DEST');
      await incomingUser(h, await h.client('admin', ['.*']), { id: 'alice', password: 'Secret-1', grant: ['put'] }, [
        'DEST',
      ]);
      const admin = await h.client('seeder', ['.*']);
      const offered = await putFile(h, admin, outgoing, 'DEST', 'offered.bin', bytesOf(50_000, 1));
      await h.close();

      const events = path.join(dir, 'events.log');
      const { url } = await serve({ ECPDS_DATA_DIR: dataDir, ECPDS_EVENT_LOG: events, ECPDS_MOVER_NAME: 'edge-a' });
      const curl = (...args: string[]) => tool('curl', ['-sSk', '-u', 'alice:Secret-1', ...args]);
      expect(md5((await curl(`${url}/portal/data/DEST/offered.bin`)).stdout)).toBe(md5(offered.bytes));

      const upload = bytesOf(123_456, 2);
      const local = path.join(dir, 'up.bin');
      fs.writeFileSync(local, upload);
      const put = await curl('-T', local, '-w', '\n%{http_code}', `${url}/portal/data/DEST/in/up.bin`);
      expect(put.stdout.toString()).toMatch(/\n201$/);
      // Under the data directory's portal-uploads, a source root of its own.
      const stored = path.join(dataDir, 'portal-uploads', 'DEST', 'in', 'up.bin');
      expect(md5(fs.readFileSync(stored))).toBe(md5(upload));
      expect(md5((await curl(`${url}/portal/data/DEST/in/up.bin`)).stdout)).toBe(md5(upload));
      await eventually(async () => (eventsIn(events, 'INH').length === 3 ? true : undefined));
      expect(eventsIn(events, 'INH').map((l) => [l.FileName, l.Action, l.BytesSent, l.TransferServer])).toEqual([
        ['offered.bin', 'download', '50000', 'edge-a'],
        ['in/up.bin', 'upload', '123456', 'edge-a'],
        ['in/up.bin', 'download', '123456', 'edge-a'],
      ]);
    },
  );
});

describe.skipIf(!postgres)('two servers on one Postgres database', () => {
  let handle: DbHandle & { url: string };
  let h: Harness;
  const servers: Array<{ server: ServerProcess; url: string; events: string }> = [];
  const big = bytesOf(64 * 1024 * 1024, 3);

  afterAll(async () => {
    await killAll();
    await h?.close();
  });

  it("count a user's transfers together: held open on both, the next is refused 429", needs('curl'), async () => {
    handle = await freshPostgres(postgres!);
    const dir = tempDir('ecpds-portal-two-');
    const sources = path.join(dir, 'sources');
    fs.mkdirSync(sources);
    h = await seeding(handle, sources);
    const admin = await h.client('admin', ['.*']);
    await h.addDestination('DEST');
    await incomingUser(h, admin, { id: 'busy', password: 'Secret-1', grant: ['put'] }, ['DEST']);
    await h.ports.repos.portal.setOption('busy', 'portal.maxConnections', '2');
    await putFile(h, admin, sources, 'DEST', 'big.bin', big);
    await putFile(h, admin, sources, 'DEST', 'small.bin', bytesOf(10, 4));
    for (const name of ['edge-a', 'edge-b']) {
      const events = path.join(dir, `${name}.log`);
      const { server, url } = await serve({
        DATABASE_URL: handle.url,
        ECPDS_DATA_DIR: path.join(dir, name),
        ECPDS_SOURCE_ROOTS: sources,
        ECPDS_EVENT_LOG: events,
        ECPDS_MOVER_NAME: name,
        ECPDS_MOVER: '0',
        // No mover, so no retriever: files are read from the shared sources, as before the store.
        ECPDS_RETRIEVAL: 'none',
        ECPDS_SWEEP_SECONDS: '0',
      });
      servers.push({ server, url, events });
    }
    const auth = basic('busy', 'Secret-1');
    // A download whose client reads one chunk and then nothing: its transfer stays open.
    const held = (url: string) =>
      new Promise<{ close(): void }>((resolve, reject) => {
        const req = https.get(`${url}/portal/data/DEST/big.bin`, {
          rejectUnauthorized: false,
          headers: { authorization: auth },
        });
        req.on('response', (res) => {
          if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}`));
          res.once('data', () => {
            res.pause();
            resolve({ close: () => req.destroy() });
          });
        });
        req.on('error', (e) => (req.destroyed ? undefined : reject(e)));
      });
    const [a, b] = servers as [(typeof servers)[0], (typeof servers)[0]];
    const downloads = [await held(a.url), await held(b.url)];
    expect(await h.ports.repos.portal.connections('busy', new Date())).toBe(2);
    for (const { url } of [a, b]) {
      const refused = await tool('curl', [
        '-sSk',
        '-u',
        'busy:Secret-1',
        '-D',
        '-',
        `${url}/portal/data/DEST/small.bin`,
      ]);
      const text = refused.stdout.toString();
      expect(text).toMatch(/^HTTP\/1\.1 429/);
      expect(text).toMatch(/\r\nretry-after: \d+\r\n/i);
      expect(text.endsWith('\r\n\r\nLogin failed')).toBe(true);
    }
    expect(eventsIn(a.events, 'DEA').at(-1)).toMatchObject({
      UserId: 'busy',
      Message: 'Maximum number of connections exceeded (2)',
    });

    for (const d of downloads) d.close();
    await eventually(async () =>
      (await h.ports.repos.portal.connections('busy', new Date())) === 0 ? true : undefined,
    );
    const after = await tool('curl', ['-sSk', '-u', 'busy:Secret-1', `${b.url}/portal/data/DEST/small.bin`]);
    expect(md5(after.stdout)).toBe(md5(bytesOf(10, 4)));
    // Each server wrote its own INH line for the download cut short, with the bytes it sent.
    for (const { events, url } of [a, b]) {
      const line = await eventually(async () => eventsIn(events, 'INH').find((l) => l.FileName === 'big.bin'));
      expect(line.TransferServer, url).toBe(events.endsWith('edge-a.log') ? 'edge-a' : 'edge-b');
      expect(Number(line.BytesSent)).toBeGreaterThan(0);
      expect(Number(line.BytesSent)).toBeLessThan(big.length);
    }
  });

  it('register an upload through one and serve it through the other', needs('curl'), async () => {
    const [a, b] = servers as [(typeof servers)[0], (typeof servers)[0]];
    // With no upload directory configured, each server keeps uploads in its own data directory.
    const local = path.join(tempDir('ecpds-portal-up-'), 'shared.bin');
    const bytes = bytesOf(5000, 5);
    fs.writeFileSync(local, bytes);
    const put = await tool('curl', [
      '-sSk',
      '-u',
      'busy:Secret-1',
      '-T',
      local,
      `${a.url}/portal/data/DEST/shared.bin`,
    ]);
    const { dataFileId } = JSON.parse(put.stdout.toString());
    const [file] = await h.db.select().from(dataFiles).where(eq(dataFiles.id, dataFileId));
    expect(file).toMatchObject({ registeredBy: 'portal:busy', size: 5000 });
    const [transfer] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, dataFileId));
    const [first] = await h.db.select().from(transferHistory).where(eq(transferHistory.transferId, transfer!.id));
    expect(first?.comment).toBe('Via Data Portal');
    const listed = await tool('curl', [
      '-sSk',
      '-u',
      'busy:Secret-1',
      '-H',
      'Accept: application/json',
      `${b.url}/portal/data/DEST/`,
    ]);
    expect(JSON.parse(listed.stdout.toString()).map((e: { name: string }) => e.name)).toContain('shared.bin');
  });
});
