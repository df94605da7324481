import fs from 'node:fs';
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { whyEdgeCannotReach } from '../../core/dissemination/reach.ts';
import { dataFiles, dataTransfers, transferHistory } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { basic } from '../support/harness.ts';
import { scaled } from '../support/time.ts';
import { needs } from '../support/tools.ts';
import { bytesOf, incomingUser, md5, type PortalScene, portalScene, putFile, tool } from './support.ts';

/**
 * The `portal` transfer method: a pull-only destination's files are "delivered" by moving nothing,
 * and stay listed for its users to fetch.
 */
let s: PortalScene;
let mover: Mover;

beforeAll(async () => {
  s = await portalScene();
  await restoreDestination(s.h, s.admin, 'PULL', [{ method: 'portal', host: 'portal' }]);
  await incomingUser(s.h, s.admin, { id: 'puller', password: 'Secret-1' }, ['PULL']);
  mover = startMover(
    {
      ports: s.h.ports,
      methods: nodeTransferMethods({ fileRoots: [] }),
      sources: nodeSourceReader({ roots: [s.sources], hosts: [] }),
    },
    { name: 'mover-1', concurrency: 4, leaseMs: 5000, heartbeatMs: 500, pollMs: 50 },
  );
}, scaled(60_000));
afterAll(async () => {
  await mover?.stop(2000);
  await s?.close();
});

describe('the portal transfer method', () => {
  it('ends a delivery DONE having moved no byte; the file stays for the portal', needs('curl'), async () => {
    const bytes = bytesOf(200_000, 5);
    const { id } = await putFile(s.h, s.admin, s.sources, 'PULL', 'fc/today.grib', bytes);
    mover.wake();
    const transfer = await eventually(async () => {
      const [t] = await s.h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, id));
      return t?.status === 'DONE' ? t : undefined;
    });
    expect(transfer.sent).toBe(0);
    const history = await s.h.db
      .select()
      .from(transferHistory)
      .where(eq(transferHistory.transferId, transfer.id))
      .orderBy(asc(transferHistory.id));
    expect(history.at(-1)).toMatchObject({ status: 'DONE', sent: 0 });
    expect(history.at(-1)?.comment).toMatch(/^Sent 0 bytes from DataMover=mover-1 to portal at fc\/today\.grib/);
    // No byte read: no checksum claimed for bytes never hashed.
    const [file] = await s.h.db.select().from(dataFiles).where(eq(dataFiles.id, id));
    expect(file!.checksum).toBeNull();
    const got = await tool('curl', ['-sSk', '-u', 'puller:Secret-1', `${s.url}/portal/data/PULL/fc/today.grib`]);
    expect(md5(got.stdout)).toBe(md5(bytes));
  });

  it('fails a delivery whose source is gone, as any method would', async () => {
    const { id, source } = await putFile(s.h, s.admin, s.sources, 'PULL', 'gone.grib', bytesOf(10, 6));
    fs.rmSync(source);
    mover.wake();
    const transfer = await eventually(async () => {
      const [t] = await s.h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, id));
      return t?.status === 'RETR' ? t : undefined;
    });
    expect(transfer.message).toMatch(/not found/);
    const listed = await s.h.call('GET', '/portal/data/PULL/', {
      auth: basic('puller', 'Secret-1'),
      headers: { accept: 'application/json' },
    });
    expect(listed.status).toBe(200);
  });

  it('is one the edge takes too: it reaches no host', () => {
    const host = {
      hostId: '1',
      module: 'portal',
      host: '',
      login: '',
      passwdSealed: null,
      dir: '',
      data: '',
      maxConnections: null,
      retryCount: null,
      retryFrequency: null,
      network: null,
    };
    expect(whyEdgeCannotReach(host, { allowPrivate: false })).toBeNull();
  });
});
