import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3Method } from '../../functions/transfer-methods/s3.ts';
import { type S3TestServer, s3TestHost, startS3 } from '../support/servers/s3.ts';
import { chunks, hostFor } from '../support/transfer.ts';
import { type AcquisitionScene, acquisitionFiles, acquisitionScene } from './support.ts';

/**
 * Acquisition end to end against s3rver: an Acquisition host listing a prefix of a bucket, its new
 * objects registered once and retrieved from the bucket.
 */
let s: AcquisitionScene;
let s3: S3TestServer;

beforeAll(async () => {
  s = await acquisitionScene('acqs3');
  s3 = await startS3();
});
afterAll(async () => {
  await s?.close();
  await s3?.stop();
});

/** Puts an object in the test bucket, at its key. */
async function put(key: string, bytes: Buffer) {
  const h = hostFor(
    's3',
    { login: s3.accessKeyId, password: s3.secretAccessKey },
    { 's3.url': s3.url, 's3.bucketName': s3.bucket, 's3.enablePathStyleAccess': 'yes' },
  );
  await s3Method().send(h, { target: key, size: bytes.byteLength }, chunks(bytes), new AbortController().signal);
}

describe('acquisition over s3', () => {
  it('new objects are registered once and retrieved from the bucket', async () => {
    const files = acquisitionFiles();
    for (const [name, bytes] of Object.entries(files)) await put(`acq-new/${name}`, bytes);
    await put('acq-new/deeper/c.bin', Buffer.from('not listed'));
    // The bucket is s3.bucketName: the listing line names the prefix under it.
    const hostId = await s.acquisitionHost('ACQ_S3', s3TestHost(s3, 'acq-new/{.*\\.bin}'));
    await s.firstRunSelects(hostId, 'ACQ_S3', 'deeper');

    // Sending nowhere, the destination's transfers are DONE once their files are retrieved.
    await s.retrievedOnce('ACQ_S3', { 'a.bin': files['a.bin'], 'b.bin': files['b.bin'] });
    // Read from the bucket: a GET of each object's key.
    for (const name of ['a.bin', 'b.bin']) {
      expect(s3.requests.some((r) => r.method === 'GET' && r.url === `/${s3.bucket}/acq-new/${name}`)).toBe(true);
    }

    await s.foundAgain('ACQ_S3', hostId, ['a.bin', 'b.bin']);
  });

  it('a host down, a file too young, a file changed: on the times and errors of s3', () =>
    s.onItsServer(
      'ACQ_S3',
      (dir, data) => {
        const h = s3TestHost(s3, `${dir}/{.*\\.bin}`);
        return { ...h, data: `${h.data}\n${data}` };
      },
      (dir, name, bytes) => put(`${dir}/${name}`, bytes),
    ));
});
