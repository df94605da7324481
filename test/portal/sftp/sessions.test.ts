import fs from 'node:fs';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Base64 } from '../../../core/common/crypto.ts';
import { revoke, revokePermissions, setOption } from '../../../core/portal/admin.ts';
import { dataFiles, dataTransfers, portalTraffic } from '../../../db/schema.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, eventFields, eventLines, incomingUser, md5, putFile, tool } from '../support.ts';
import { call, connect, type SftpScene, sftpScene } from './support.ts';

/**
 * Who logs in to the portal's SFTP server and what a session may do as the user changes: OpenSSH's
 * sftp and scp with passwords (through sshpass), open-access and self-service users, the upload
 * quota, and changes made while a session is open.
 */
let s: SftpScene;
const big = bytesOf(2 * 1024 * 1024 + 5, 41);
let subscriberId: number;

beforeAll(async () => {
  s = await sftpScene();
  const { h, admin } = s;
  await h.addDestination('DEST');
  await incomingUser(h, admin, { id: 'paula', password: 'Pass-Word-1', grant: ['put'] }, ['DEST']);
  await incomingUser(h, admin, { id: 'opened', mode: 'open-access' }, ['DEST']);
  await incomingUser(h, admin, { id: 'selfs', password: 'Own-Pass-1', mode: 'self-service' }, ['DEST']);
  await incomingUser(h, admin, { id: 'capped', password: 'Capped-1', grant: ['put'] }, ['DEST']);
  await h.ports.repos.portal.setOption('capped', 'portal.maxUploadBytes', '100000');
  await incomingUser(h, admin, { id: 'thrifty', password: 'Thrifty-1' }, ['DEST']);
  await h.ports.repos.portal.setOption('thrifty', 'portal.maxDownloadBytes', '100000');
  await incomingUser(h, admin, { id: 'changing', password: 'Change-1', grant: ['put'] }, ['DEST']);
  await incomingUser(h, admin, { id: 'subbed', password: 'Own-Pass-2', mode: 'self-service' }, ['DEST']);
  await putFile(h, admin, s.sources, 'DEST', 'big.bin', big);
  await putFile(h, admin, s.sources, 'DEST', 'a.txt', Buffer.from('hello\n'));
  const repo = h.ports.repos.portal;
  const at = h.ports.clock();
  const base = { name: 'S', iso: 'gb', tokenExpiresAt: new Date(at.getTime() + 60_000) };
  for (const [userId, password] of [
    ['selfs', 'Sub-Pass-1'],
    ['subbed', 'Sub-Pass-2'],
  ] as const) {
    const id = (await repo.addSubscriber({ ...base, userId, email: `${userId}@example.org`, tokenHash: userId }, at))!;
    await repo.changeSubscriber(id, ['unverified'], { status: 'active', at, passwordHash: sha256Base64(password) });
    if (userId === 'subbed') subscriberId = id;
  }
}, scaled(120_000));
afterAll(() => s?.close());

/** OpenSSH's options for a password login, the password given to sshpass. */
const passwordOptions = (port: number, portFlag: '-P' | '-p') => [
  portFlag,
  String(port),
  '-o',
  'StrictHostKeyChecking=no',
  '-o',
  'UserKnownHostsFile=/dev/null',
  '-o',
  'PubkeyAuthentication=no',
  '-o',
  'PreferredAuthentications=password',
  '-o',
  'NumberOfPasswordPrompts=1',
  // sftp -b asks ssh for batch mode, which tries no password; an option given first wins.
  '-o',
  'BatchMode=no',
  '-o',
  'LogLevel=ERROR',
];
const withPassword = (password: string, command: string, args: string[]) =>
  tool('sshpass', ['-e', command, ...args], { cwd: s.work, env: { SSHPASS: password } });
const batchFile = (commands: string[]) => {
  const file = path.join(s.work, `batch-${Math.random().toString(36).slice(2)}`);
  fs.writeFileSync(file, `${commands.join('\n')}\n`);
  return file;
};
const sftpWithPassword = (user: string, password: string, commands: string[]) =>
  withPassword(password, 'sftp', [
    ...passwordOptions(s.sftp.port, '-P'),
    '-b',
    batchFile(commands),
    `${user}@127.0.0.1`,
  ]);
const dea = () => eventLines(s.h, 'DEA').map(eventFields);
const registered = (destination: string, target: string) =>
  s.h.db
    .select({ id: dataTransfers.id, status: dataTransfers.status })
    .from(dataTransfers)
    .where(and(eq(dataTransfers.destination, destination), eq(dataTransfers.target, target)));

describe('OpenSSH sftp -b and scp with a password', () => {
  it(
    'gets a file, resumes one with reget, and puts one with the put permission',
    needs('sshpass', 'sftp'),
    async () => {
      fs.writeFileSync(path.join(s.work, 'part.bin'), big.subarray(0, 700_000));
      const upload = bytesOf(150_000, 42);
      fs.writeFileSync(path.join(s.work, 'up.bin'), upload);
      const r = await sftpWithPassword('paula', 'Pass-Word-1', [
        'get /DEST/big.bin whole.bin',
        'reget /DEST/big.bin part.bin',
        'put up.bin /DEST/in/up.bin',
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(md5(fs.readFileSync(path.join(s.work, 'whole.bin')))).toBe(md5(big));
      expect(md5(fs.readFileSync(path.join(s.work, 'part.bin')))).toBe(md5(big));
      const [transfer] = await registered('DEST', 'in/up.bin');
      expect(transfer).toBeDefined();
      const [file] = await s.h.db
        .select({ size: dataFiles.size })
        .from(dataFiles)
        .innerJoin(dataTransfers, eq(dataTransfers.dataFileId, dataFiles.id))
        .where(eq(dataTransfers.id, transfer!.id));
      expect(file!.size).toBe(upload.length);
    },
  );

  it('scp copies a file with a password', needs('sshpass', 'scp'), async () => {
    const to = path.join(s.work, 'scp-pw.bin');
    const r = await withPassword('Pass-Word-1', 'scp', [
      ...passwordOptions(s.sftp.port, '-P'),
      'paula@127.0.0.1:/DEST/big.bin',
      to,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(md5(fs.readFileSync(to))).toBe(md5(big));
  });

  it('refuses a wrong password, with a DEA line as the HTTPS portal writes', needs('sshpass', 'sftp'), async () => {
    const before = dea().length;
    const r = await sftpWithPassword('paula', 'Wrong-Pass', ['ls /DEST']);
    expect(r.code).not.toBe(0);
    expect(r.stdout.toString()).not.toMatch(/big\.bin/);
    expect(dea().slice(before)).toEqual([
      expect.objectContaining({ UserId: 'paula', Message: 'Password authentication failed' }),
    ]);
  });
});

describe('open-access and self-service users', () => {
  it(
    'lets anyone into an open-access user with no credentials, to read only what it was granted',
    needs('sftp'),
    async () => {
      const r = await tool(
        'sftp',
        [
          '-P',
          String(s.sftp.port),
          '-o',
          'StrictHostKeyChecking=no',
          '-o',
          'UserKnownHostsFile=/dev/null',
          '-o',
          'BatchMode=yes',
          '-o',
          'PubkeyAuthentication=no',
          '-o',
          'LogLevel=ERROR',
          '-b',
          batchFile(['ls -1 /DEST', 'get /DEST/a.txt open-a.txt']),
          'opened@127.0.0.1',
        ],
        { cwd: s.work },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.toString()).toMatch(/big\.bin/);
      expect(fs.readFileSync(path.join(s.work, 'open-a.txt'), 'utf8')).toBe('hello\n');
      const { client, sftp } = await connect(s.sftp.port, { username: 'opened' });
      try {
        await expect(call((done) => sftp.open('/DEST/up.bin', 'w', done))).rejects.toThrow(/denied/i);
      } finally {
        client.end();
      }
    },
  );

  it(
    "lets a self-service user in with an active subscriber's password, never its own",
    needs('sshpass', 'sftp'),
    async () => {
      const ok = await sftpWithPassword('selfs', 'Sub-Pass-1', ['ls -1 /DEST']);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout.toString()).toMatch(/a\.txt/);
      const own = await sftpWithPassword('selfs', 'Own-Pass-1', ['ls -1 /DEST']);
      expect(own.code).not.toBe(0);
      expect(dea().at(-1)).toMatchObject({ UserId: 'selfs', Message: 'Subscriber password authentication failed' });
    },
  );
});

describe('the upload quota over SFTP', () => {
  it(
    'cuts an upload that goes over it, registers nothing, then refuses the login',
    needs('sshpass', 'sftp'),
    async () => {
      const bytes = bytesOf(300_000, 43);
      fs.writeFileSync(path.join(s.work, 'over.bin'), bytes);
      const r = await sftpWithPassword('capped', 'Capped-1', ['put over.bin /DEST/over.bin']);
      expect(r.code).not.toBe(0);
      // OpenSSH's client shows the status code's name, not the server's message.
      expect(r.stderr).toMatch(/write remote "\/DEST\/over\.bin": Failure/);
      expect(await registered('DEST', 'over.bin')).toEqual([]);
      expect(fs.existsSync(path.join(s.uploads, 'DEST', 'over.bin'))).toBe(false);
      expect(fs.readdirSync(path.join(s.uploads, '.partial'))).toEqual([]);
      const traffic = await s.h.db.select().from(portalTraffic).where(eq(portalTraffic.userId, 'capped'));
      const taken = traffic.reduce((sum, t) => sum + t.uploadBytes, 0);
      expect(taken).toBeGreaterThanOrEqual(100_000);
      expect(taken).toBeLessThan(bytes.length);
      const again = await sftpWithPassword('capped', 'Capped-1', ['ls /DEST']);
      expect(again.code).not.toBe(0);
      expect(dea().at(-1)).toMatchObject({ UserId: 'capped', Message: 'Upload quota exceeded' });
    },
  );
});

describe('the download quota over SFTP', () => {
  it('cuts a download at the quota, then refuses the next login', needs('sshpass', 'sftp'), async () => {
    const r = await sftpWithPassword('thrifty', 'Thrifty-1', ['get /DEST/big.bin thrifty.bin']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/read remote "\/DEST\/big\.bin" : Failure/);
    expect(fs.statSync(path.join(s.work, 'thrifty.bin')).size).toBeLessThanOrEqual(100_000);
    const traffic = await s.h.db.select().from(portalTraffic).where(eq(portalTraffic.userId, 'thrifty'));
    expect(traffic.reduce((sum, t) => sum + t.downloadBytes, 0)).toBe(100_000);
    const before = dea().length;
    const again = await sftpWithPassword('thrifty', 'Thrifty-1', ['get /DEST/a.txt thrifty-a.txt']);
    expect(again.code).not.toBe(0);
    // The client hears what any refused login gets; the reason is in the DEA line only.
    expect(again.stderr).toMatch(/Permission denied/);
    expect(fs.existsSync(path.join(s.work, 'thrifty-a.txt'))).toBe(false);
    expect(dea().slice(before)).toEqual([
      expect.objectContaining({ UserId: 'thrifty', Message: 'Download quota exceeded', Context: 'sftp:127.0.0.1' }),
    ]);
  });
});

describe('changes while a session is open', () => {
  it('applies a permission taken away, an option, and the account disabled at the next request', async () => {
    const { client, sftp } = await connect(s.sftp.port, { username: 'changing', password: 'Change-1' });
    try {
      const handle = await call<Buffer>((done) => sftp.open('/DEST/first.bin', 'w', done));
      await call((done) => sftp.close(handle, done));
      await revokePermissions(s.h.ports, 'test', 'changing', ['put']);
      await expect(call((done) => sftp.open('/DEST/second.bin', 'w', done))).rejects.toThrow(/denied/i);
      expect((await call<unknown[]>((done) => sftp.readdir('/DEST', done))).length).toBeGreaterThan(0);
      await setOption(s.h.ports, 'test', 'changing', 'portal.excludeProtocols', 'sftp');
      await expect(call((done) => sftp.readdir('/DEST', done))).rejects.toThrow(/denied/i);
      expect(dea().at(-1)).toMatchObject({ UserId: 'changing', Message: 'Protocol sftp not allowed' });
    } finally {
      client.end();
    }
    expect(await registered('DEST', 'second.bin')).toEqual([]);
  });

  it('ends what a revoked subscriber and a disabled user may do, at their next request', async () => {
    const sub = await connect(s.sftp.port, { username: 'subbed', password: 'Sub-Pass-2' });
    const user = await connect(s.sftp.port, { username: 'paula', password: 'Pass-Word-1' });
    try {
      expect(await call<unknown[]>((done) => sub.sftp.readdir('/DEST', done))).not.toEqual([]);
      await revoke(s.h.ports, 'test', 'subbed', subscriberId);
      await expect(call((done) => sub.sftp.readdir('/DEST', done))).rejects.toThrow(/denied/i);
      expect(await call<unknown[]>((done) => user.sftp.readdir('/DEST', done))).not.toEqual([]);
      const r = await s.h.call('DELETE', '/v1/incoming/user/del/paula', { auth: s.admin });
      expect(r.status, r.text).toBe(200);
      await expect(call((done) => user.sftp.readdir('/DEST', done))).rejects.toThrow(/denied/i);
      expect(dea().at(-1)).toMatchObject({ UserId: 'paula', Message: 'Disabled' });
    } finally {
      sub.client.end();
      user.client.end();
    }
  });
});
