import fs from 'node:fs';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import type { Client, SFTPWrapper } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeKey } from '../../../core/portal/key-admin.ts';
import { openPostgres } from '../../../db/client.ts';
import { dataTransfers } from '../../../db/schema.ts';
import { nodeUploadStore } from '../../../functions/node/portal-uploads.ts';
import { nodeSourceReader } from '../../../functions/node/sources.ts';
import { loadOrCreateHostKey } from '../../../functions/portal-sftp/host-key.ts';
import { type PortalSftpOptions, startPortalSftp } from '../../../functions/portal-sftp/server.ts';
import { createPorts, createProcessState } from '../../../functions/ports.ts';
import { eventually } from '../../support/engine.ts';
import { bytesOf, eventFields, eventLines, incomingUser, putFile } from '../support.ts';
import { call, connect, type SftpScene, sftpScene } from './support.ts';

/**
 * Access that ends while an SFTP session is open: handles opened before the user was disabled, lost
 * a destination, changed its password, key or mode, refused at their next READ, WRITE or CLOSE, with
 * nothing registered of an upload cut off. This server's re-check interval is an hour: what it
 * refuses here, it refuses because the change was made in its own process. A second server over
 * the same database, which hears of no change, sees it within its own interval.
 */
let s: SftpScene;
const big = bytesOf(2 * 1024 * 1024, 51);

beforeAll(async () => {
  s = await sftpScene({ recheckMs: 3_600_000 });
  const { h, admin } = s;
  await h.addDestination('DEST');
  await h.addDestination('OTHER');
  await putFile(h, admin, s.sources, 'DEST', 'big.bin', big);
  await incomingUser(h, admin, { id: 'reader', password: 'Reader-Pass-1' }, ['DEST']);
  await incomingUser(h, admin, { id: 'mover', password: 'Mover-Pass-1', grant: ['put'] }, ['DEST', 'OTHER']);
  await incomingUser(h, admin, { id: 'changer', password: 'Changer-Pass-1' }, ['DEST']);
  await incomingUser(h, admin, { id: 'keyed', password: 'Keyed-Pass-1' }, ['DEST']);
  await incomingUser(h, admin, { id: 'opened', mode: 'open-access' }, ['DEST']);
  await incomingUser(h, admin, { id: 'idler', password: 'Idler-Pass-1' }, ['DEST']);
  await incomingUser(h, admin, { id: 'far', password: 'Far-Pass-1' }, ['DEST']);
  await incomingUser(h, admin, { id: 'limited', password: 'Limited-Pass-1' }, ['DEST']);
  await h.ports.repos.portal.setOption('limited', 'portal.maxConnections', '1');
}, 120_000);
afterAll(() => s?.close());

const CHUNK = 32 * 1024;
/** One READ of the handle at `position`: the bytes answered. */
const read = (sftp: SFTPWrapper, handle: Buffer, position: number) =>
  call<number>((done) => sftp.read(handle, Buffer.alloc(CHUNK), 0, CHUNK, position, (e, n) => done(e, n)));
const write = (sftp: SFTPWrapper, handle: Buffer, position: number, data: Buffer) =>
  call((done) => sftp.write(handle, data, 0, data.length, position, done));
const openFile = (sftp: SFTPWrapper, file: string, flags: 'r' | 'w') =>
  call<Buffer>((done) => sftp.open(file, flags, done));
const closeFile = (sftp: SFTPWrapper, handle: Buffer) => call((done) => sftp.close(handle, done));
const api = (method: 'POST' | 'DELETE', route: string) => s.h.call(method, route, { auth: s.admin });
const dea = () => eventLines(s.h, 'DEA').map(eventFields);
const registered = (destination: string, target: string) =>
  s.h.db
    .select({ id: dataTransfers.id })
    .from(dataTransfers)
    .where(and(eq(dataTransfers.destination, destination), eq(dataTransfers.target, target)));
/** Whether the connection is closed by the server (or was already). */
const closed = (client: Client) =>
  new Promise<true>((resolve) => {
    client.once('close', () => resolve(true));
    if ((client as unknown as { _sock?: { destroyed?: boolean } })._sock?.destroyed) resolve(true);
  });
/** A read handle of big.bin whose first READ was answered. */
async function reading(login: Parameters<typeof connect>[1]) {
  const session = await connect(s.sftp.port, login);
  const handle = await openFile(session.sftp, '/DEST/big.bin', 'r');
  expect(await read(session.sftp, handle, 0)).toBe(CHUNK);
  return { ...session, handle };
}

describe('a handle opened before access ended', () => {
  it('is refused its next READ once the user is disabled, and the session ends', async () => {
    const { client, sftp, handle } = await reading({ username: 'reader', password: 'Reader-Pass-1' });
    const hungUp = closed(client);
    try {
      expect((await api('DELETE', '/v1/incoming/user/del/reader')).status).toBe(200);
      await expect(read(sftp, handle, CHUNK)).rejects.toThrow(/denied/i);
      expect(dea().at(-1)).toMatchObject({ UserId: 'reader', Message: 'Disabled' });
      expect(await hungUp).toBe(true);
    } finally {
      client.end();
    }
  });

  it("is refused WRITE and CLOSE once the destination is no longer the user's: nothing is registered", async () => {
    const { client, sftp } = await connect(s.sftp.port, { username: 'mover', password: 'Mover-Pass-1' });
    try {
      const written = await openFile(sftp, '/DEST/cut-whole.bin', 'w');
      await write(sftp, written, 0, bytesOf(100_000, 52));
      const writing = await openFile(sftp, '/DEST/cut-half.bin', 'w');
      await write(sftp, writing, 0, bytesOf(50_000, 53));
      const elsewhere = await openFile(sftp, '/OTHER/kept.bin', 'w');
      await write(sftp, elsewhere, 0, bytesOf(10_000, 54));

      const r = await api('DELETE', '/v1/incoming/association/del?id=mover&destination=DEST');
      expect(r.status, r.text).toBe(200);
      // Every byte was written before: the close is what would register it.
      await expect(closeFile(sftp, written)).rejects.toThrow(/denied/i);
      await expect(write(sftp, writing, 50_000, bytesOf(1000, 55))).rejects.toThrow(/denied/i);
      await expect(closeFile(sftp, writing)).rejects.toThrow(/denied/i);
      // The session goes on, narrowed: its other destination's upload is registered.
      await closeFile(sftp, elsewhere);
      expect(await registered('OTHER', 'kept.bin')).toHaveLength(1);
    } finally {
      client.end();
    }
    expect(await registered('DEST', 'cut-whole.bin')).toEqual([]);
    expect(await registered('DEST', 'cut-half.bin')).toEqual([]);
    expect(fs.existsSync(path.join(s.uploads, 'DEST', 'cut-whole.bin'))).toBe(false);
    expect(fs.existsSync(path.join(s.uploads, 'DEST', 'cut-half.bin'))).toBe(false);
    await eventually(async () => (fs.readdirSync(path.join(s.uploads, '.partial')).length === 0 ? true : undefined));
  });
});

describe('a session whose credentials change', () => {
  it('ends when the password changes, not when the same password is given again', async () => {
    const { client, sftp, handle } = await reading({ username: 'changer', password: 'Changer-Pass-1' });
    const user = (pass: string) =>
      `/v1/incoming/user/add?${new URLSearchParams({ id: 'changer', email: 'c@example.org', iso: 'gb', pass })}`;
    const hungUp = closed(client);
    try {
      expect((await api('POST', user('Changer-Pass-1'))).status).toBe(200);
      expect(await read(sftp, handle, CHUNK)).toBe(CHUNK);
      expect((await api('POST', user('Changer-Pass-2'))).status).toBe(200);
      await expect(read(sftp, handle, 2 * CHUNK)).rejects.toThrow(/denied/i);
      expect(dea().at(-1)).toMatchObject({ UserId: 'changer', Message: 'Credentials changed since login' });
      expect(await hungUp).toBe(true);
    } finally {
      client.end();
    }
  });

  it('opened with a key ends when that key is removed', async () => {
    const pair = s.keyPair('keyed');
    const key = await s.addKey('keyed', pair.line);
    const { client, sftp, handle } = await reading({ username: 'keyed', privateKey: pair.privateKey });
    try {
      await removeKey(s.h.ports, 'test', 'keyed', key.fingerprint);
      await expect(read(sftp, handle, CHUNK)).rejects.toThrow(/denied/i);
    } finally {
      client.end();
    }
  });

  it('of open access ends when the user becomes standard-login', async () => {
    const { client, sftp, handle } = await reading({ username: 'opened' });
    try {
      const mode = new URLSearchParams({ id: 'opened', email: 'o@example.org', iso: 'gb' });
      mode.set('portalService', 'standard-login');
      expect((await api('POST', `/v1/incoming/user/add2?${mode}`)).status).toBe(200);
      await expect(read(sftp, handle, CHUNK)).rejects.toThrow(/denied/i);
      await expect(call((done) => sftp.readdir('/DEST', done))).rejects.toThrow();
    } finally {
      client.end();
    }
  });
});

/** Another SFTP server over the same database, with its own process state: it hears of no change made here. */
async function otherServer(options: Pick<PortalSftpOptions, 'idleTimeoutMs' | 'recheckMs'>) {
  const url = (s.h.handle as { url?: string }).url;
  const own = url ? openPostgres(url, { max: 2 }) : null;
  const ports = createPorts({
    db: own?.db ?? s.h.db,
    state: createProcessState(),
    secrets: s.h.ports.secrets,
    logger: { info: () => {}, warn: () => {}, error: () => {} },
    events: { write: () => {} },
    sources: s.h.ports.sources,
    waitUntil: () => {},
    clock: () => new Date(),
  });
  const server = await startPortalSftp({
    ports,
    host: '127.0.0.1',
    port: 0,
    hostKey: loadOrCreateHostKey(path.join(s.dir, 'data')),
    sources: nodeSourceReader({ roots: [s.sources, s.uploads], hosts: [] }),
    uploads: nodeUploadStore(s.uploads),
    serverName: 'other',
    ...options,
  });
  return {
    port: server.port,
    async close() {
      await server.close();
      await own?.close();
    },
  };
}

describe('another server', () => {
  it('refuses an open handle of a user disabled elsewhere within its re-check interval', async () => {
    const other = await otherServer({ recheckMs: 200 });
    const { client, sftp } = await connect(other.port, { username: 'far', password: 'Far-Pass-1' });
    try {
      const handle = await openFile(sftp, '/DEST/big.bin', 'r');
      expect(await read(sftp, handle, 0)).toBe(CHUNK);
      expect((await api('DELETE', '/v1/incoming/user/del/far')).status).toBe(200);
      let position = CHUNK;
      const refusal = await eventually(
        () =>
          read(sftp, handle, position).then(
            (n) => {
              position += n;
              return undefined;
            },
            (e: Error) => e,
          ),
        20_000,
        'a refused READ',
      );
      expect(refusal.message).toMatch(/denied/i);
      expect(position).toBeLessThan(big.length);
    } finally {
      client.end();
      await other.close();
    }
  });

  it('goes on reading a file open while the user is at its connection limit, past re-checks', async () => {
    const other = await otherServer({ recheckMs: 100 });
    const { client, sftp } = await connect(other.port, { username: 'limited', password: 'Limited-Pass-1' });
    try {
      const handle = await openFile(sftp, '/DEST/big.bin', 'r');
      // The one transfer the user may have is this download: a second is refused.
      await expect(openFile(sftp, '/DEST/big.bin', 'r')).rejects.toMatchObject({ code: 4 });
      let position = 0;
      while (position < big.length) {
        position += await read(sftp, handle, position);
        // Several re-check intervals pass while the file is read.
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await closeFile(sftp, handle);
    } finally {
      client.end();
      await other.close();
    }
  });

  it('closes an idle session whose requests are all refused', async () => {
    const other = await otherServer({ idleTimeoutMs: 1000 });
    const { client, sftp } = await connect(other.port, { username: 'idler', password: 'Idler-Pass-1' });
    const hungUp = closed(client);
    let refused = 0;
    try {
      // A write it may not make, over and over, for many idle timeouts: never activity.
      const until = Date.now() + 20_000;
      let done = false;
      void hungUp.then(() => (done = true));
      while (!done && Date.now() < until) {
        await openFile(sftp, '/DEST/not-mine.bin', 'w').then(
          () => expect.unreachable('the write was allowed'),
          (e: Error) => {
            if (/denied/i.test(e.message)) refused++;
          },
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(done).toBe(true);
      expect(refused).toBeGreaterThan(0);
    } finally {
      client.end();
      await other.close();
    }
  });
});
