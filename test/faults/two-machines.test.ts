import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ports } from '../../core/ports.ts';
import type { DbHandle } from '../../db/client.ts';
import { freshPostgres } from '../support/database.ts';
import { eventually } from '../support/engine.ts';
import {
  basic,
  freePort,
  killAll,
  removeTempDirs,
  type ServerProcess,
  startMoverProcess,
  startServer,
  tempDir,
} from '../support/processes.ts';
import { type S3TestServer, startS3 } from '../support/servers/s3.ts';
import { type SlowSource, startSlowSource } from '../support/servers/slow-source.ts';
import { type Sshd, sshdMissing, startSshd } from '../support/servers/sshd.ts';
import { addDestination, adminOf, putThrough, SECRET_KEY, sceneOf, transfersOf } from '../support/store-scene.ts';
import { scaled } from '../support/time.ts';

/**
 * Two machines: two servers and two movers, each with a data directory of its own, sharing
 * nothing but one Postgres database and one S3 store. The files come from a producer's HTTP
 * server both can reach (a local path exists on one machine only).
 */
const url = process.env.TEST_DATABASE_URL;
const noSshd = sshdMissing();
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const PORTAL_USER = 'reader2m';
const PORTAL_PASSWORD = `pw-${randomBytes(8).toString('hex')}`;

describe.skipIf(!url || noSshd !== null)(`two machines on one database and one S3 store ${noSshd ?? ''}`, () => {
  let handle: DbHandle & { url: string };
  let ports: Ports;
  let s3: S3TestServer;
  let producer: SlowSource;
  let sshd: Sshd;
  let producerDir: string;
  const bases: string[] = [];
  let auth: string;
  const sent = new Map<string, Buffer>();
  let delivered: string;

  beforeAll(async () => {
    handle = await freshPostgres(url!);
    ports = sceneOf(handle);
    s3 = await startS3('shared-store');
    sshd = await startSshd();
    producerDir = tempDir('ecpds-producer-');
    producer = await startSlowSource(producerDir, 64 * 1024 * 1024);
    const machine = (name: string) => ({
      DATABASE_URL: handle.url,
      ECPDS_SECRET_KEY: SECRET_KEY,
      ECPDS_DATA_DIR: path.join(tempDir(`ecpds-${name}-`), 'data'),
      ECPDS_STORE_URL: 's3://shared-store/objects',
      ECPDS_STORE_S3_ENDPOINT: s3.url,
      ECPDS_STORE_S3_ACCESS_KEY_ID: s3.accessKeyId,
      ECPDS_STORE_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      ECPDS_SOURCE_HOSTS: producer.host,
      ECPDS_MOVER_POLL_MS: '100',
      ECPDS_MOVER_HEARTBEAT_SECONDS: '1',
      ECPDS_SWEEP_SECONDS: '0',
    });
    const servers: ServerProcess[] = [];
    for (const name of ['one', 'two']) {
      // The first start creates the bootstrap admin; the second waits for it to be there.
      const server = startServer({ ...machine(name), ECPDS_MOVER: '0', PORT: String(await freePort()) });
      bases.push(await server.ready);
      servers.push(server);
    }
    for (const name of ['one', 'two']) {
      await startMoverProcess({ ...machine(name), ECPDS_MOVER_NAME: `mover-${name}` }).ready;
    }
    auth = adminOf(servers[0]!);
    delivered = sshd.scratch('two-machines-');
    await addDestination(ports, bases[0]!, auth, 'TWO_MACHINES', [
      { method: 'sftp', host: `127.0.0.1:${sshd.port}`, login: sshd.user, passwd: sshd.password, dir: delivered },
    ]);
    await ports.repos.transaction(async (repos) => {
      await repos.incomingUsers.insert(
        {
          id: PORTAL_USER,
          email: 'reader@example.org',
          iso: 'gb',
          portalService: 'standard-login',
          active: true,
          passwordSealed: await ports.secrets.encrypt(PORTAL_PASSWORD),
          lastLoginDate: null,
        },
        ports.clock(),
      );
      await repos.incomingUsers.addAssociation(PORTAL_USER, 'TWO_MACHINES');
    });
  }, scaled(180_000));

  afterAll(async () => {
    await killAll();
    await producer?.stop();
    await sshd?.stop();
    await s3?.stop();
    await handle?.close();
    removeTempDirs();
  });

  it(
    'delivers every file put through either server',
    async () => {
      for (let i = 0; i < 12; i++) {
        const name = `f${i}.bin`;
        sent.set(name, randomBytes(16 * 1024 + i * 997));
        fs.writeFileSync(path.join(producerDir, name), sent.get(name)!);
        await putThrough(bases[i % 2]!, auth, 'TWO_MACHINES', producer.url(name), name);
      }
      await eventually(
        async () => {
          const transfers = await transfersOf(handle, 'TWO_MACHINES');
          return transfers.length === sent.size && transfers.every((t) => t.status === 'DONE') ? true : undefined;
        },
        90_000,
        'every transfer DONE',
      );
      for (const [name, bytes] of sent) {
        expect(md5(fs.readFileSync(path.join(delivered, name))), name).toBe(md5(bytes));
      }
    },
    scaled(180_000),
  );

  it(
    "serves a file put through one server from the other's portal, though the source is gone",
    async () => {
      const name = 'portal.bin';
      const bytes = randomBytes(40 * 1024);
      fs.writeFileSync(path.join(producerDir, name), bytes);
      await putThrough(bases[0]!, auth, 'TWO_MACHINES', producer.url(name), name);
      await eventually(
        async () =>
          (await transfersOf(handle, 'TWO_MACHINES')).find((t) => t.target === name)?.status === 'DONE'
            ? true
            : undefined,
        60_000,
        `${name} DONE`,
      );
      // Only the store has it now: the other machine cannot have read it anywhere else.
      fs.rmSync(path.join(producerDir, name));
      const got = await download(`${bases[1]}/portal/data/TWO_MACHINES/${name}`, basic(PORTAL_USER, PORTAL_PASSWORD));
      expect(got.status).toBe(200);
      expect(md5(got.body)).toBe(md5(bytes));
    },
    scaled(120_000),
  );
});

function download(target: string, authorization: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    https
      .get(target, { rejectUnauthorized: false, agent: false, headers: { authorization } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}
