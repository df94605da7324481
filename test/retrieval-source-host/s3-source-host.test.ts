import { createHash, randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { dataTransfers } from '../../db/schema.ts';
import { s3Method } from '../../functions/transfer-methods/s3.ts';
import { eventually } from '../support/engine.ts';
import type { Harness } from '../support/harness.ts';
import { type S3TestServer, s3TestHost, startS3 } from '../support/servers/s3.ts';
import { chunks, hostFor } from '../support/transfer.ts';
import { sourceHostHarness, withEngine, withSourceHost } from './support.ts';

/** A destination's Source host in an S3 bucket: the put measures the object there, the retriever reads it. */
let scene: Awaited<ReturnType<typeof sourceHostHarness>>;
let h: Harness;
let admin: string;
let s3: S3TestServer;
let sourceHostId: string;
const DESTINATION = 'FROM_S3_SOURCE';
const md5 = (bytes: Uint8Array) => createHash('md5').update(bytes).digest('hex');

/** Writes an object into the bucket, as a producer would. */
const plant = (key: string, bytes: Uint8Array) =>
  s3Method().send(
    hostFor(
      's3',
      { login: s3.accessKeyId, password: s3.secretAccessKey, directory: '' },
      { 's3.url': s3.url, 's3.bucketName': s3.bucket, 's3.enablePathStyleAccess': 'yes' },
    ),
    { target: key, size: bytes.byteLength },
    chunks(bytes),
    new AbortController().signal,
  );

beforeAll(async () => {
  s3 = await startS3();
  scene = await sourceHostHarness('s3-source');
  ({ h, admin } = scene);
  sourceHostId = await withSourceHost(
    h,
    admin,
    DESTINATION,
    { ...s3TestHost(s3, 'delivered'), nickname: 's3-source-target' },
    { ...s3TestHost(s3, 'products'), nickname: 's3-source-source' },
  );
});
afterAll(async () => {
  await scene?.close();
  await s3?.stop();
});

it('retrieves an object of the Source host bucket and delivers its bytes, even once it is overwritten', async () => {
  const content = randomBytes(300_000);
  await plant('products/run12.grib', content);
  const q = new URLSearchParams({ destination: DESTINATION, source: 'run12.grib', target: 'run12.grib' });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const missing = new URLSearchParams({ destination: DESTINATION, source: 'none.grib', target: 'none.grib' });
  const refused = await h.call('GET', `/v1/datafile/put?${missing}`, { auth: admin });
  expect(refused.status).toBe(500);
  expect(refused.json.message).toContain(`on Source host ${sourceHostId}`);
  expect(refused.json.message).toContain('404');

  const statusIs = (status: string) => async () => {
    const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
    return t?.status === status ? t : undefined;
  };
  await withEngine(h, () => eventually(statusIs('WAIT'), 30_000), { mover: false });
  // The producer's next run overwrites the object before the send: the registered bytes still leave.
  await plant('products/run12.grib', randomBytes(content.byteLength));
  await withEngine(h, () => eventually(statusIs('DONE'), 30_000));
  expect(md5((await s3.object('delivered/run12.grib'))!)).toBe(md5(content));
  const ret = h.events.find((e) => e.startsWith('RET;'));
  expect(ret).toContain(`HostId=${sourceHostId};`);
  expect(ret).toContain('TransferProtocol=s3');
});
