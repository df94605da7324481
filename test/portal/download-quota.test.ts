import https from 'node:https';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portalTraffic } from '../../db/schema.ts';
import { signed } from './s3/support.ts';
import { call, connect, type SftpScene, sftpScene } from './sftp/support.ts';
import { bytesOf, eventFields, eventLines, incomingUser, putFile } from './support.ts';

/**
 * The download quota holds while bytes go, for all of a user's downloads at once: three downloads
 * of a file far larger than the quota, started together while it has room, deliver no more between
 * them than the quota, counted by the clients, over each transport.
 */
let s: SftpScene;
const SIZE = 48 * 1024 * 1024;
const QUOTA = 100_000;
const users = { https: 'web', sftp: 'shell', s3: 'bucket' } as const;
const PASSWORD = 'Quota-Pass-1';

beforeAll(async () => {
  s = await sftpScene();
  const { h, admin } = s;
  await h.addDestination('DEST');
  for (const user of Object.values(users)) {
    await incomingUser(h, admin, { id: user, password: PASSWORD }, ['DEST']);
    await h.ports.repos.portal.setOption(user, 'portal.maxDownloadBytes', String(QUOTA));
  }
  await putFile(h, admin, s.sources, 'DEST', 'large.bin', bytesOf(SIZE, 3));
}, 120_000);
afterAll(() => s?.close());

/** What a client received of a GET over HTTPS before the answer ended, whole or cut. */
function httpsReceived(url: string, headers: Record<string, string>) {
  return new Promise<{ status: number; bytes: number }>((resolve, reject) => {
    let status = 0;
    let bytes = 0;
    const request = https.get(url, { headers, rejectUnauthorized: false }, (response) => {
      status = response.statusCode ?? 0;
      response.on('data', (chunk: Buffer) => (bytes += chunk.length));
      response.on('error', () => undefined);
      response.on('close', () => resolve({ status, bytes }));
    });
    request.on('error', (e) => (status === 0 ? reject(e) : resolve({ status, bytes })));
  });
}

/** What an SFTP client read of the file, in order, before its reads ended (the end, or a refusal). */
async function sftpReceived() {
  const { client, sftp } = await connect(s.sftp.port, { username: users.sftp, password: PASSWORD });
  try {
    const handle = await call<Buffer>((done) => sftp.open('/DEST/large.bin', 'r', done));
    let bytes = 0;
    // Within what ssh2's client asks in one READ: a longer read is several, and a refusal of one loses the others.
    const buffer = Buffer.alloc(16 * 1024);
    while (true) {
      const got = await new Promise<number>((resolve) =>
        sftp.read(handle, buffer, 0, buffer.length, bytes, (error, n) => resolve(error ? 0 : n)),
      );
      if (got === 0) break;
      bytes += got;
    }
    return bytes;
  } finally {
    client.end();
  }
}

const downloaded = async (user: string) =>
  (await s.h.db.select().from(portalTraffic).where(eq(portalTraffic.userId, user))).reduce(
    (sum, t) => sum + t.downloadBytes,
    0,
  );

const three = <T>(download: () => Promise<T>) => Promise.all([download(), download(), download()]);

/** The file's bytes the clients got: the bodies of the answers that serve it; a refusal's body is no part of it. */
function fileBytes(results: { status: number; bytes: number }[]) {
  for (const r of results) expect(r.status === 200 || r.status >= 400, `status ${r.status}`).toBe(true);
  return results.filter((r) => r.status === 200).reduce((sum, r) => sum + r.bytes, 0);
}

describe('three downloads at once against a download quota', () => {
  it('over HTTPS: the bodies together stop at the quota, and the next download is refused', async () => {
    const auth = { authorization: `Basic ${Buffer.from(`${users.https}:${PASSWORD}`).toString('base64')}` };
    const total = fileBytes(await three(() => httpsReceived(`${s.url}/portal/data/DEST/large.bin`, auth)));
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(QUOTA);
    await expect.poll(() => downloaded(users.https)).toBe(total);
    const after = await httpsReceived(`${s.url}/portal/data/DEST/large.bin`, auth);
    expect(after).toEqual({ status: 429, bytes: expect.any(Number) });
    expect(eventLines(s.h, 'DEA').map(eventFields).at(-1)).toMatchObject({
      UserId: users.https,
      Message: 'Download quota exceeded',
    });
  });

  it('over SFTP: the reads together stop at the quota', async () => {
    const results = await three(sftpReceived);
    const total = results.reduce((sum, bytes) => sum + bytes, 0);
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(QUOTA);
    await expect.poll(() => downloaded(users.sftp)).toBe(total);
  });

  it('over S3: the GETs together stop at the quota', async () => {
    const credentials = { accessKeyId: users.s3, secretAccessKey: PASSWORD };
    const get = async () => {
      const request = await signed(`${s.url}/portal/s3/DEST/large.bin`, credentials);
      return httpsReceived(request.url.toString(), Object.fromEntries(request.headers));
    };
    const total = fileBytes(await three(get));
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(QUOTA);
    await expect.poll(() => downloaded(users.s3)).toBe(total);
  });
});
