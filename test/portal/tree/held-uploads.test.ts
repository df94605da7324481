import fs from 'node:fs';
import path from 'node:path';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataFiles, dataTransfers, destinations } from '../../../db/schema.ts';
import { basic } from '../../support/harness.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { sdkClient } from '../s3/support.ts';
import { call, connect, type SftpScene, sftpScene } from '../sftp/support.ts';
import { bytesOf, incomingUser, md5, newestTransfer, putFile, tool } from '../support.ts';

/**
 * A held upload (HOLD: a temporary name before its rename, or a destination's standby) is the
 * uploader's until it is released: on HTTPS, SFTP and S3, other users and open-access visitors do
 * not see it (listings, stat, downloads), while the uploader sees, fetches and renames its own.
 */
let s: SftpScene;
const HELD = bytesOf(5000, 1);
const OLD = new Date('2020-01-02T03:04:05Z');
/** The listings' form of a time: whole seconds. */
const OLD_LISTED = '2020-01-02T03:04:05Z';

beforeAll(async () => {
  s = await sftpScene();
  const { h, admin } = s;
  for (const d of ['DEST', 'STANDBY']) await h.addDestination(d);
  await h.db.update(destinations).set({ data: 'incoming.standby = "yes"' }).where(eq(destinations.name, 'STANDBY'));
  const uploader = ['put', 'rename', 'delete'] as const;
  await incomingUser(h, admin, { id: 'alice', password: 'Secret-1', grant: [...uploader] }, ['DEST', 'STANDBY']);
  await incomingUser(h, admin, { id: 'bob', password: 'Secret-2', grant: [...uploader] }, ['DEST', 'STANDBY']);
  await incomingUser(h, admin, { id: 'opener', mode: 'open-access' }, ['DEST']);
  const old = await putFile(h, admin, s.sources, 'DEST', 'in/old.bin', Buffer.from('old\n'));
  await h.db.update(dataFiles).set({ createdAt: OLD }).where(eq(dataFiles.id, old.id));
}, scaled(60_000));
afterAll(() => s?.close());

const curl = (user: string, password: string, ...args: string[]) =>
  tool('curl', ['-sSk', '-u', `${user}:${password}`, ...args]);
const listing = async (who: [string, string] | null, path: string) => {
  const r = await s.h.call('GET', `/portal/${who === null ? 'home/opener' : 'data'}/${path}`, {
    auth: who === null ? undefined : basic(...who),
    headers: { accept: 'application/json' },
  });
  return r.status === 200 ? (r.json as Array<{ name: string; lastModified: string | null }>) : r.status;
};
const names = (rows: Awaited<ReturnType<typeof listing>>) =>
  typeof rows === 'number' ? rows : rows.map((r) => r.name);
const s3 = (user: string, password: string) => sdkClient(`${s.url}/portal/s3`, user, password);
const statusOf = (e: unknown) => (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
const transferOf = (destination: string, target: string) => newestTransfer(s.h, destination, target);

describe('an upload under a temporary name, held until its rename', () => {
  it('is seen by its uploader only, on every protocol, until renamed', needs('curl'), async () => {
    const alice = await connect(s.sftp.port, { username: 'alice', password: 'Secret-1' });
    const bob = await connect(s.sftp.port, { username: 'bob', password: 'Secret-2' });
    try {
      await call((done) => alice.sftp.writeFile('/DEST/in/x.bin.tmp', HELD, done));
      expect(await transferOf('DEST', 'in/x.bin.tmp')).toMatchObject({ status: 'HOLD' });

      // HTTPS: listings, the file itself, and the folder's time (its newest file's as each sees them).
      const own = await listing(['alice', 'Secret-1'], 'DEST/in/');
      expect(names(own)).toEqual(['old.bin', 'x.bin.tmp']);
      expect(names(await listing(['bob', 'Secret-2'], 'DEST/in/'))).toEqual(['old.bin']);
      expect(names(await listing(null, 'DEST/in/'))).toEqual(['old.bin']);
      const top = (who: [string, string] | null) => listing(who, 'DEST/');
      expect(await top(['bob', 'Secret-2'])).toEqual([
        expect.objectContaining({ name: 'in', lastModified: OLD_LISTED }),
      ]);
      const aliceTop = await top(['alice', 'Secret-1']);
      expect(typeof aliceTop !== 'number' && aliceTop[0]!.lastModified).not.toBe(OLD_LISTED);
      const got = await curl('alice', 'Secret-1', `${s.url}/portal/data/DEST/in/x.bin.tmp`);
      expect(md5(got.stdout)).toBe(md5(HELD));
      const missed = await curl(
        'bob',
        'Secret-2',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        `${s.url}/portal/data/DEST/in/x.bin.tmp`,
      );
      expect(missed.stdout.toString()).toBe('404');
      const anonymous = await tool('curl', [
        '-sSk',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        `${s.url}/portal/home/opener/DEST/in/x.bin.tmp`,
      ]);
      expect(anonymous.stdout.toString()).toBe('404');

      // SFTP: READDIR, STAT and OPEN.
      const dir = async (who: typeof alice) =>
        (await call<Array<{ filename: string }>>((done) => who.sftp.readdir('/DEST/in', done))).map((e) => e.filename);
      expect((await dir(alice)).sort()).toEqual(['old.bin', 'x.bin.tmp']);
      expect(await dir(bob)).toEqual(['old.bin']);
      expect(await call<{ size: number }>((done) => alice.sftp.stat('/DEST/in/x.bin.tmp', done))).toMatchObject({
        size: HELD.length,
      });
      await expect(call((done) => bob.sftp.stat('/DEST/in/x.bin.tmp', done))).rejects.toMatchObject({ code: 2 });
      await expect(call((done) => bob.sftp.open('/DEST/in/x.bin.tmp', 'r', done))).rejects.toMatchObject({ code: 2 });
      // Nor can another user rename it, which it cannot find.
      await expect(
        call((done) => bob.sftp.rename('/DEST/in/x.bin.tmp', '/DEST/in/stolen.bin', done)),
      ).rejects.toMatchObject({ code: 2 });

      // S3: ListObjectsV2, HeadObject and GetObject.
      const keys = async (client: S3Client) =>
        ((await client.send(new ListObjectsV2Command({ Bucket: 'DEST', Prefix: 'in/' }))).Contents ?? []).map(
          (c) => c.Key,
        );
      expect(await keys(s3('alice', 'Secret-1'))).toEqual(['in/old.bin', 'in/x.bin.tmp']);
      expect(await keys(s3('bob', 'Secret-2'))).toEqual(['in/old.bin']);
      const head = await s3('alice', 'Secret-1').send(new HeadObjectCommand({ Bucket: 'DEST', Key: 'in/x.bin.tmp' }));
      expect(head.ContentLength).toBe(HELD.length);
      const bobS3 = s3('bob', 'Secret-2');
      await expect(bobS3.send(new HeadObjectCommand({ Bucket: 'DEST', Key: 'in/x.bin.tmp' }))).rejects.toSatisfy(
        (e) => statusOf(e) === 404,
      );
      await expect(bobS3.send(new GetObjectCommand({ Bucket: 'DEST', Key: 'in/x.bin.tmp' }))).rejects.toMatchObject({
        name: 'NoSuchKey',
      });

      // Released by its rename: everyone sees the file under its final name.
      await call((done) => alice.sftp.rename('/DEST/in/x.bin.tmp', '/DEST/in/x.bin', done));
      expect(await dir(bob)).toEqual(['old.bin', 'x.bin']);
      expect(names(await listing(null, 'DEST/in/'))).toEqual(['old.bin', 'x.bin']);
      expect(await keys(bobS3)).toEqual(['in/old.bin', 'in/x.bin']);
    } finally {
      alice.client.end();
      bob.client.end();
    }
  });

  it("is its uploader's when it replaces a file of that name registered by another", async () => {
    // A live transfer of the name given new bytes (a forced put) records who put them.
    await putFile(s.h, s.admin, s.sources, 'DEST', 'in/y.bin.tmp', Buffer.from('by the operator\n'));
    const alice = await connect(s.sftp.port, { username: 'alice', password: 'Secret-1' });
    try {
      await call((done) => alice.sftp.writeFile('/DEST/in/y.bin.tmp', HELD, done));
      const transfer = await transferOf('DEST', 'in/y.bin.tmp');
      expect(transfer).toMatchObject({ status: 'HOLD' });
      const [file] = await s.h.db.select().from(dataFiles).where(eq(dataFiles.id, transfer!.dataFileId));
      expect(file!.registeredBy).toBe('portal:alice');
      expect(names(await listing(['alice', 'Secret-1'], 'DEST/in/'))).toContain('y.bin.tmp');
      expect(names(await listing(['bob', 'Secret-2'], 'DEST/in/'))).not.toContain('y.bin.tmp');
    } finally {
      alice.client.end();
    }
  });
});

describe("a destination's standby", () => {
  it('holds an upload out of sight of others until an operator releases it', needs('curl'), async () => {
    const local = path.join(s.work, 'report.txt');
    fs.writeFileSync(local, 'report\n');
    const put = await curl('alice', 'Secret-1', '-T', local, `${s.url}/portal/data/STANDBY/report.txt`);
    expect(put.code, put.stderr).toBe(0);
    expect(await transferOf('STANDBY', 'report.txt')).toMatchObject({ status: 'HOLD' });
    expect(names(await listing(['alice', 'Secret-1'], 'STANDBY/'))).toEqual(['report.txt']);
    expect(names(await listing(['bob', 'Secret-2'], 'STANDBY/'))).toEqual([]);
    const bobS3 = s3('bob', 'Secret-2');
    expect((await bobS3.send(new ListObjectsV2Command({ Bucket: 'STANDBY' }))).KeyCount).toBe(0);
    // The S3 upload of the same user is held the same way.
    await s3('bob', 'Secret-2').send(new PutObjectCommand({ Bucket: 'STANDBY', Key: 'bob.txt', Body: 'bob\n' }));
    expect(names(await listing(['bob', 'Secret-2'], 'STANDBY/'))).toEqual(['bob.txt']);
    expect(names(await listing(['alice', 'Secret-1'], 'STANDBY/'))).toEqual(['report.txt']);

    await s.h.db
      .update(dataTransfers)
      .set({ status: 'WAIT' })
      .where(and(eq(dataTransfers.destination, 'STANDBY'), eq(dataTransfers.target, 'report.txt')));
    expect(names(await listing(['bob', 'Secret-2'], 'STANDBY/'))).toEqual(['bob.txt', 'report.txt']);
  });
});
