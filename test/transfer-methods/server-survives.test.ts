import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restore } from '../../core/backups/handlers.ts';
import { parseBackupBody } from '../../core/backups/schema.ts';
import { SecretBox } from '../../core/common/crypto.ts';
import { put } from '../../core/data-files/handlers.ts';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import { optionLine } from '../../core/hosts/options.ts';
import type { Ports } from '../../core/ports.ts';
import type { DbHandle } from '../../db/client.ts';
import { dataTransfers, transferHistory } from '../../db/schema.ts';
import { nodeSourceProber } from '../../functions/node/sources.ts';
import { backgroundWork, createPorts, createProcessState } from '../../functions/ports.ts';
import { freshPostgres } from '../support/database.ts';
import { eventually } from '../support/engine.ts';
import { freePort, killAll, request, type ServerProcess, startServer, tempDir } from '../support/processes.ts';

/**
 * `ecpds-edge serve` (API, console, portal and mover in one process, the compiled build) on
 * Postgres, given a destination whose SFTP host has an `sftp.privateKey` that is not a key on a
 * port that refuses connections: the attempt fails with that reason, the process keeps serving,
 * and the next transfer is delivered. Such a host used to end the process with an 'error' event
 * nobody listened for, and again at every start, as it claimed the same transfer.
 */
const url = process.env.TEST_DATABASE_URL;
const key = randomBytes(32);
const quiet = { info() {}, warn() {}, error() {} };
let handle: DbHandle & { url: string };
let ports: Ports;
let dir: string;
let server: ServerProcess;
let serverUrl: string;

beforeAll(async () => {
  if (!url) return;
  handle = await freshPostgres(url);
  dir = tempDir('ecpds-server-survives-');
  fs.mkdirSync(path.join(dir, 'src'));
  ports = createPorts({
    db: handle.db,
    state: createProcessState(),
    secrets: new SecretBox(new Uint8Array(key)),
    logger: quiet,
    events: { write() {} },
    sources: nodeSourceProber({
      roots: [path.join(dir, 'src')],
      hosts: [],
      timeoutMs: 2000,
    }),
    waitUntil: backgroundWork(quiet).waitUntil,
  });
  server = startServer({
    PORT: String(await freePort()),
    DATABASE_URL: handle.url,
    ECPDS_DATA_DIR: path.join(dir, 'data'),
    ECPDS_SECRET_KEY: key.toString('base64'),
    ECPDS_SOURCE_ROOTS: path.join(dir, 'src'),
    ECPDS_FILE_HOST_ROOTS: path.join(dir, 'out'),
    ECPDS_MOVER_POLL_MS: '100',
    ECPDS_SWEEP_SECONDS: '0',
  });
  serverUrl = await server.ready;
}, 120_000);
afterAll(async () => {
  if (!url) return;
  await killAll();
  await handle.close();
});

let hostIds = 100;
async function destination(name: string, host: Record<string, unknown>) {
  const backup = parseBackupBody({
    backup: {
      methods: ['file', 'sftp'].map((m) => ({
        name: m,
        ectransModuleName: m,
        active: true,
        ectransModule: { name: m, classe: null, archive: null, active: true },
      })),
      destinations: [
        {
          destination: {
            name,
            countryIso: 'gb',
            type: 1,
            maxConnections: -1,
            retryCount: 0,
          },
          associations: [
            {
              priority: 0,
              host: {
                hostid: ++hostIds,
                nickname: name,
                type: 'Dissemination',
                active: true,
                ...host,
              },
            },
          ],
        },
      ],
    },
  });
  if (!backup.ok) throw new Error(backup.problem);
  await ports.repos.transaction((repos) =>
    restore({ ports, requestId: 't', caller: null }, repos, backup.backup, false),
  );
  await setDestinationStatus(ports, 'test', name, 'start');
}

async function putFile(destination: string) {
  const file = path.join(dir, 'src', `${destination}.bin`);
  fs.writeFileSync(file, randomBytes(4096));
  const { id } = await put({
    ctx: {
      ports,
      requestId: 't',
      caller: { username: 'test', showSensitiveInfo: false },
    },
    input: { destination, source: file, target: 'f.bin' },
  } as Parameters<typeof put>[0]);
  const [t] = await handle.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, id));
  return t!.id;
}

describe.skipIf(!url)('ecpds-edge serve, given a host whose options are wrong', () => {
  it('fails the attempt with the reason, keeps serving, and delivers the next transfer', async () => {
    const refused = await freePort();
    await destination('BAD_KEY', {
      transferMethodName: 'sftp',
      host: `127.0.0.1:${refused}`,
      login: 'someone',
      passwd: 'a-password',
      dir: 'in',
      data: optionLine('sftp.privateKey', 'this is not a key'),
    });
    const bad = await putFile('BAD_KEY');
    const comment = await eventually(
      async () => {
        if (server.hasExited()) throw new Error(`the server exited:\n${server.output()}`);
        const rows = await handle.db
          .select({
            status: transferHistory.status,
            comment: transferHistory.comment,
          })
          .from(transferHistory)
          .where(eq(transferHistory.transferId, bad))
          .orderBy(asc(transferHistory.id));
        return rows.find((r) => r.status === 'STOP')?.comment ?? undefined;
      },
      20_000,
      'the attempt to fail',
    );
    expect(comment).toMatch(/^Cannot use sftp\.privateKey for someone@127\.0\.0\.1:\d+: /);

    // The connection it never opened cannot fail later either.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(server.hasExited(), server.output()).toBe(false);
    expect((await request(serverUrl, 'GET', '/healthz')).status).toBe(200);

    await destination('GOOD', {
      transferMethodName: 'file',
      host: 'localhost',
      dir: path.join(dir, 'out', 'GOOD'),
    });
    const good = await putFile('GOOD');
    await eventually(
      async () => {
        const [t] = await handle.db.select().from(dataTransfers).where(eq(dataTransfers.id, good));
        return t!.status === 'DONE' ? true : undefined;
      },
      20_000,
      'the next transfer DONE',
    );
    expect(fs.existsSync(path.join(dir, 'out', 'GOOD', 'f.bin'))).toBe(true);
    expect(server.hasExited()).toBe(false);
    expect(server.output()).not.toContain('ECONNREFUSED');
  }, 90_000);
});
