import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataTransfers } from '../../db/schema.ts';
import { eventually } from '../support/engine.ts';
import type { Harness } from '../support/harness.ts';
import { type Proftpd, proftpdAvailability, startProftpd } from '../support/servers/proftpd.ts';
import { sourceHostHarness, withEngine, withSourceHost } from './support.ts';

/** A destination's Source host reached over FTP: the put measures the path there, the retriever reads it. */
const ftpd = proftpdAvailability();

let scene: Awaited<ReturnType<typeof sourceHostHarness>>;
let h: Harness;
let admin: string;
let server: Proftpd;
let sourceHostId: string;
const DESTINATION = 'FROM_FTP_SOURCE';

beforeAll(async () => {
  if (!ftpd.run) return;
  server = await startProftpd();
  scene = await sourceHostHarness('ftp-source');
  ({ h, admin } = scene);
  const reach = { host: `127.0.0.1:${server.port}`, login: server.user, passwd: server.password };
  sourceHostId = await withSourceHost(
    h,
    admin,
    DESTINATION,
    { method: 'ftp', ...reach, dir: '', nickname: 'ftp-source-target' },
    { method: 'ftp', ...reach, dir: '/products', nickname: 'ftp-source-source' },
  );
});
afterAll(async () => {
  await scene?.close();
  await server?.stop();
});

const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');

describe.skipIf(!ftpd.run)(`a destination's Source host over FTP ${ftpd.reason}`, () => {
  it('retrieves a path on the Source host and delivers its bytes', async () => {
    const content = randomBytes(200_000);
    server.plant('products/run12.grib', content);
    const q = new URLSearchParams({ destination: DESTINATION, source: 'run12.grib', target: 'run12.grib' });
    const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
    expect(r.status, r.text).toBe(200);
    const missing = new URLSearchParams({ destination: DESTINATION, source: 'none.grib', target: 'none.grib' });
    const refused = await h.call('GET', `/v1/datafile/put?${missing}`, { auth: admin });
    expect(refused.status).toBe(500);
    expect(refused.json.message).toContain(`/products/none.grib on Source host ${sourceHostId}: Cannot be read (550`);

    await withEngine(h, () =>
      eventually(async () => {
        const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
        return t?.status === 'DONE' ? t : undefined;
      }, 30_000),
    );
    expect(md5(fs.readFileSync(path.join(server.root, 'run12.grib')))).toBe(md5(content));
    const ret = h.events.find((e) => e.startsWith('RET;'));
    expect(ret).toContain(`HostId=${sourceHostId};`);
    expect(ret).toContain('TransferProtocol=ftp');
  });
});
