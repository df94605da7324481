import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reachableDue } from '../core/dissemination/deliver-due.ts';
import { edgeCanReach } from '../core/dissemination/reach.ts';
import type { TestHost } from './support/backups.ts';
import { restoreDestination } from './support/engine.ts';
import { createHarness, type Harness } from './support/harness.ts';

/** What the edge's cron queues, on the suite's database: never crowded out by Node-only destinations. */
let h: Harness;
let admin: string;
let server: http.Server;
let sourceHost: string;

beforeAll(async () => {
  // Sources the edge can read: http(s) URLs on an allowed host (answers HEAD with a length).
  server = http.createServer((_req, res) => res.writeHead(200, { 'content-length': 4 }).end('grib'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sourceHost = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  h = await createHarness({ sourceHosts: [sourceHost] });
  admin = await h.client('operator', ['.*']);
});
afterAll(async () => {
  await h.close();
  server.close();
});

const put = async (destination: string, n: number) => {
  const q = new URLSearchParams({ destination, source: `http://${sourceHost}/f${n}.grib`, target: `f${n}` });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
};

describe('the due destinations the edge queues', () => {
  it('are found past any number of destinations only Node movers can serve', async () => {
    // Waiting longer than the edge's own: with the limit below, they would fill it.
    for (let i = 0; i < 5; i++) {
      await restoreDestination(h, admin, `NODE_ONLY_${i}`, [{ method: 'sftp', host: 'sftp.example.org' }]);
      await put(`NODE_ONLY_${i}`, i);
    }
    await restoreDestination(h, admin, 'EDGE_S3', [
      { method: 's3', host: 'storage.example.org', data: 's3.bucketName = "b"' },
    ]);
    await put('EDGE_S3', 99);
    const reaches = (host: Parameters<typeof edgeCanReach>[0]) => edgeCanReach(host, { allowPrivate: false });
    expect(await reachableDue(h.ports, reaches, 3)).toEqual(['EDGE_S3']);
  });

  it('are those with a due transfer whose source a Worker reads: an http(s) URL or an R2 object', async () => {
    const reaches = (host: Parameters<typeof edgeCanReach>[0]) => edgeCanReach(host, { allowPrivate: false });
    const s3: TestHost[] = [{ method: 's3', host: 'storage.example.org', data: 's3.bucketName = "b"' }];
    for (const [name, source] of [
      ['EDGE_R2_SOURCE', 'r2://ECPDS_SOURCES/fc.grib'],
      ['EDGE_LOCAL_SOURCE', '/data/outgoing/fc.grib'],
      ['EDGE_FTP_SOURCE', 'ftp://files.example.org/fc.grib'],
    ] as const) {
      await restoreDestination(h, admin, name, s3);
      // Registered as a Worker (r2) or a Node instance (a local path) would: written directly.
      const now = h.ports.clock();
      await h.ports.repos.dataFiles.register(
        { source, size: 4, registeredBy: 'test', comment: 'Registered by test', retrieve: false },
        {
          destination: name,
          target: 'fc.grib',
          uniqueName: '',
          priority: 99,
          status: 'WAIT',
          standby: false,
          scheduledAt: now,
          expiresAt: new Date(now.getTime() + 3_600_000),
          metadata: [],
        },
      );
    }
    const due = await reachableDue(h.ports, reaches, 100);
    expect(due.filter((name) => name.endsWith('_SOURCE'))).toEqual(['EDGE_R2_SOURCE']);
  });
});
