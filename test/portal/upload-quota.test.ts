import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { and, eq, gt, like } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataFiles, portalConnections } from '../../db/schema.ts';
import { scaled } from '../support/time.ts';
import { BASE, s3, signed, xmlText } from './s3/support.ts';
import { bytesOf, incomingUser, type PortalScene, portalScene } from './support.ts';

/**
 * The upload quota holds while bytes arrive, for all of a user's uploads at once: three uploads of
 * 1 MiB started together against a quota of 1.5 MiB (each seeing room for its whole body when it
 * starts) keep no more between them than the quota, measured at the server (the files registered
 * and the part files on disk), and one at least is refused.
 */
let s: PortalScene;
const SIZE = 1024 * 1024;
const QUOTA = 1.5 * SIZE;
/** What a client writes at once; the server's chunks are no larger than the socket's reads of it. */
const CHUNK = 64 * 1024;
const PASSWORD = 'Quota-Pass-1';
const users = { https: 'web', s3: 'bucket', single: 'single' } as const;

beforeAll(async () => {
  s = await portalScene();
  await s.h.addDestination('DEST');
  for (const user of Object.values(users)) {
    await incomingUser(s.h, s.admin, { id: user, password: PASSWORD, grant: ['put'] }, ['DEST']);
    await s.h.ports.repos.portal.setOption(user, 'portal.maxUploadBytes', String(QUOTA));
  }
}, scaled(60_000));
afterAll(() => s?.close());

/** Resolves once the server counts `n` transfers of the user running: each has started, its quota judged. */
async function running(user: string, n: number) {
  const deadline = Date.now() + scaled(30_000);
  while (Date.now() < deadline) {
    const rows = await s.h.db
      .select()
      .from(portalConnections)
      .where(and(eq(portalConnections.userId, user), gt(portalConnections.leaseUntil, new Date())));
    if (rows.length >= n) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${user}: ${n} transfers never ran at once`);
}

/**
 * A PUT over real HTTPS whose body's first chunk goes at once and the rest once `gate` opens, as
 * clients uploading together send; answers the status (0 when the connection ended before an answer).
 */
function gatedPut(target: URL, headers: Record<string, string>, body: Buffer, gate: Promise<void>) {
  return new Promise<number>((resolve) => {
    let status = 0;
    const req = https.request(
      target,
      {
        method: 'PUT',
        headers: { ...headers, 'content-length': String(body.length) },
        rejectUnauthorized: false,
        // A connection of its own: one the server closed after refusing a body is not used again.
        agent: false,
      },
      (res) => {
        status = res.statusCode ?? 0;
        res.resume();
        res.on('close', () => resolve(status));
        res.on('error', () => resolve(status));
      },
    );
    req.on('error', () => resolve(status));
    void (async () => {
      req.write(body.subarray(0, CHUNK));
      await gate.catch(() => undefined);
      for (let at = CHUNK; at < body.length && !req.destroyed; at += CHUNK) {
        if (!req.write(body.subarray(at, at + CHUNK))) await new Promise((r) => req.once('drain', r));
      }
      req.end();
    })();
  });
}

/** A 2xx answer; any other (a refusal, or the connection cut before one) is not an upload kept. */
const accepted = (status: number) => status >= 200 && status < 300;
const basicAuth = (user: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}`,
});
const registered = (prefix: string) =>
  s.h.db
    .select()
    .from(dataFiles)
    .where(like(dataFiles.source, `%${path.sep}DEST${path.sep}${prefix}%`));
/** The bytes of the files under a directory of the upload store, recursively. */
const bytesUnder = (dir: string): number =>
  !fs.existsSync(dir)
    ? 0
    : fs
        .readdirSync(dir, { withFileTypes: true })
        .reduce(
          (n, e) =>
            n + (e.isDirectory() ? bytesUnder(path.join(dir, e.name)) : fs.statSync(path.join(dir, e.name)).size),
          0,
        );

describe('three uploads at once against an upload quota', () => {
  it('over HTTPS: the files kept together stay within the quota, and an upload is refused', async () => {
    const gate = running(users.https, 3);
    const put = (i: number) =>
      gatedPut(new URL(`${s.url}/portal/data/DEST/web/${i}.bin`), basicAuth(users.https), bytesOf(SIZE, i), gate);
    const statuses = await Promise.all([put(1), put(2), put(3)]);
    await gate;
    const files = await registered('web');
    const stored = bytesUnder(path.join(s.uploads, 'DEST', 'web'));
    expect(stored).toBeLessThanOrEqual(QUOTA + 3 * CHUNK);
    expect(statuses.filter((status) => !accepted(status)).length).toBeGreaterThanOrEqual(1);
    // A refused upload registers nothing and leaves no file, finished or temporary.
    expect(files.length).toBe(statuses.filter((status) => accepted(status)).length);
    expect(stored).toBe(files.length * SIZE);
    expect(bytesUnder(path.join(s.uploads, '.partial'))).toBe(0);
    // What the refused received counts in the traffic as well.
    const traffic = await s.h.ports.repos.portal.trafficSince(users.https, new Date(0));
    expect(traffic.uploadBytes).toBeGreaterThanOrEqual(stored);
  });

  it('over S3: the parts of one upload sent at once keep on disk no more than the quota', async () => {
    const credentials = { accessKeyId: users.s3, secretAccessKey: PASSWORD };
    const key = `${s.url}/portal/s3/DEST/multi.bin`;
    const answer = await s3(s.h, `${BASE}/DEST/multi.bin?uploads`, credentials, { method: 'POST' });
    const uploadId = xmlText(await answer.text(), 'UploadId')!;
    expect(uploadId).toBeTruthy();
    const gate = running(users.s3, 3);
    const part = async (n: number) => {
      const request = await signed(`${key}?partNumber=${n}&uploadId=${uploadId}`, credentials, {
        method: 'PUT',
        payloadHash: 'UNSIGNED-PAYLOAD',
      });
      return gatedPut(request.url, Object.fromEntries(request.headers), bytesOf(SIZE, n), gate);
    };
    const statuses = await Promise.all([part(1), part(2), part(3)]);
    await gate;
    const onDisk = fs
      .readdirSync(path.join(s.uploads, '.partial', 'multipart', uploadId))
      .filter((name) => !name.endsWith('.json'));
    const stored = onDisk.reduce(
      (n, name) => n + fs.statSync(path.join(s.uploads, '.partial', 'multipart', uploadId, name)).size,
      0,
    );
    expect(stored).toBeLessThanOrEqual(QUOTA + 3 * CHUNK);
    expect(statuses.filter((status) => !accepted(status)).length).toBeGreaterThanOrEqual(1);
    // A refused part leaves no file: what is on disk is the parts accepted, whole.
    expect(stored).toBe(statuses.filter((status) => accepted(status)).length * SIZE);
  });

  it('a single upload under the quota is kept whole', async () => {
    const status = await gatedPut(
      new URL(`${s.url}/portal/data/DEST/single/one.bin`),
      basicAuth(users.single),
      bytesOf(SIZE, 7),
      Promise.resolve(),
    );
    expect(accepted(status)).toBe(true);
    expect((await registered('single')).length).toBe(1);
    expect(bytesUnder(path.join(s.uploads, 'DEST', 'single'))).toBe(SIZE);
  });
});
