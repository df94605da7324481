import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataTransfers } from '../../../db/schema.ts';
import { scaled } from '../../support/time.ts';
import { folderMakers, type PortalScene, portalScene } from '../support.ts';
import { sdkClient } from './support.ts';

/**
 * The folder marker some S3 clients put for a new folder (a PutObject of a key ending in '/', no
 * bytes), with the AWS SDK against /portal/s3 over HTTPS: answered as making that folder is on every
 * protocol (`put` implies it, else `mkdir` under its rule), and nothing is stored.
 */
let s: PortalScene;

beforeAll(async () => {
  s = await portalScene();
  await folderMakers(s);
}, scaled(60_000));
afterAll(() => s?.close());

const client = (user: string, password: string) => sdkClient(`${s.url}/portal/s3`, user, password);
const marker = (user: string, password: string, Key: string, Body = '') =>
  client(user, password).send(new PutObjectCommand({ Bucket: 'DEST', Key, Body: Buffer.from(Body) }));

describe('a folder marker', () => {
  it('is taken with put, stores nothing, and the folder shows once a file is in it', async () => {
    const made = await marker('putter', 'Secret-1', 'new/');
    expect(made.ETag).toBe('"d41d8cd98f00b204e9800998ecf8427e"');
    await marker('putter', 'Secret-1', 'new/deeper/');
    expect(await s.h.db.select().from(dataTransfers).where(eq(dataTransfers.destination, 'DEST'))).toEqual([]);
    const listed = () =>
      client('putter', 'Secret-1').send(new ListObjectsV2Command({ Bucket: 'DEST', Delimiter: '/' }));
    expect((await listed()).KeyCount).toBe(0);
    await client('putter', 'Secret-1').send(
      new PutObjectCommand({ Bucket: 'DEST', Key: 'new/deeper/f.txt', Body: 'f\n' }),
    );
    expect((await listed()).CommonPrefixes?.map((p) => p.Prefix)).toEqual(['new/']);
  });

  it('is refused without put or mkdir, and with mkdir outside its rule', async () => {
    await expect(marker('reader', 'Secret-2', 'nope/')).rejects.toMatchObject({ name: 'AccessDenied' });
    await expect(marker('maker', 'Secret-3', 'elsewhere/')).rejects.toMatchObject({ name: 'AccessDenied' });
    await expect(marker('maker', 'Secret-3', 'ok/sub/')).resolves.toBeDefined();
  });

  it('with bytes is no file the tree can hold', async () => {
    await expect(marker('putter', 'Secret-1', 'full/', 'bytes')).rejects.toMatchObject({ name: 'InvalidArgument' });
    await expect(marker('putter', 'Secret-1', 'a//')).rejects.toMatchObject({ name: 'InvalidArgument' });
  });
});
