import fs from 'node:fs';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataFiles, dataTransfers, destinations, portalTraffic } from '../../../db/schema.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { bytesOf, eventFields, eventLines, incomingUser, md5, newestTransfer, putFile, tool } from '../support.ts';
import { call, connect, logsIn, rcloneSftpEnv, type SftpScene, sftpScene } from './support.ts';

/**
 * The portal's SFTP server with real clients: OpenSSH's sftp and scp (keys), rclone's sftp remote,
 * and ssh2's client for passwords and the protocol's edge cases.
 */
let s: SftpScene;
let alice: ReturnType<SftpScene['keyPair']>;
let bob: ReturnType<SftpScene['keyPair']>;
let reader: ReturnType<SftpScene['keyPair']>;
const big = bytesOf(3 * 1024 * 1024 + 17, 1);
const small = bytesOf(200_000, 2);

beforeAll(async () => {
  s = await sftpScene();
  const { h, admin } = s;
  for (const d of ['DEST', 'OTHER', 'PARTS', 'BADPAT']) await h.addDestination(d);
  // Temporary names by a pattern of the destination's own; one that does not compile is left aside.
  await h.db
    .update(destinations)
    .set({ data: 'incoming.tmpPattern = ".*\\.part"' })
    .where(eq(destinations.name, 'PARTS'));
  await h.db.update(destinations).set({ data: 'incoming.tmpPattern = "(.*"' }).where(eq(destinations.name, 'BADPAT'));
  const all = ['put', 'delete', 'mkdir', 'rename', 'rmdir'] as const;
  await incomingUser(h, admin, { id: 'alice', password: 'Secret-1', grant: [...all] }, ['DEST', 'PARTS', 'BADPAT']);
  await incomingUser(h, admin, { id: 'bob', password: 'Secret-2' }, ['OTHER']);
  await incomingUser(h, admin, { id: 'reader', password: 'Secret-3' }, ['DEST']);
  await incomingUser(h, admin, { id: 'carol', password: 'Secret-4', active: false }, ['DEST']);
  await incomingUser(h, admin, { id: 'dave', password: 'Secret-5' }, ['DEST']);
  await h.ports.repos.portal.setOption('dave', 'portal.excludeProtocols', 'https,sftp');
  await putFile(h, admin, s.sources, 'DEST', 'big.bin', big);
  await putFile(h, admin, s.sources, 'DEST', 'dir/small.bin', small);
  await putFile(h, admin, s.sources, 'DEST', 'a.txt', Buffer.from('hello\n'));
  await putFile(h, admin, s.sources, 'OTHER', 'secret.txt', Buffer.from('not for alice\n'));
  alice = s.keyPair('alice');
  bob = s.keyPair('bob');
  reader = s.keyPair('reader');
  await s.addKey('alice', alice.line);
  await s.addKey('bob', bob.line);
  await s.addKey('reader', reader.line);
}, scaled(120_000));
afterAll(() => s?.close());

const batch = async (key: string, user: string, commands: string[]) => {
  const file = path.join(s.work, `batch-${Math.random().toString(36).slice(2)}`);
  fs.writeFileSync(file, `${commands.join('\n')}\n`);
  return tool('sftp', [...s.sshOptions(key), '-b', file, `${user}@127.0.0.1`], { cwd: s.work });
};
const inh = () => eventLines(s.h, 'INH').map(eventFields);
const dea = () => eventLines(s.h, 'DEA').map(eventFields);

describe('OpenSSH sftp -b with a key', needs('ssh-keygen'), () => {
  it(
    'lists the destinations and their files, and gets a file whole, with an INH line of protocol sftp',
    needs('sftp'),
    async () => {
      const r = await batch(alice.file, 'alice', ['ls -1 /', 'ls -l /DEST', 'get /DEST/big.bin big.bin']);
      expect(r.code, r.stderr).toBe(0);
      const out = r.stdout.toString();
      expect(out).toMatch(/^\/DEST$/m);
      expect(out).not.toMatch(/OTHER/);
      expect(out).toMatch(/-rw-r--r-- .* 3145745 .* big\.bin/);
      expect(out).toMatch(/^d.* dir$/m);
      expect(md5(fs.readFileSync(path.join(s.work, 'big.bin')))).toBe(md5(big));
      expect(inh().at(-1)).toMatchObject({
        DestinationName: 'DEST',
        FileName: 'big.bin',
        BytesSent: String(big.length),
        UserId: 'alice',
        TransferProtocol: 'sftp',
        HostAddress: '127.0.0.1',
        Action: 'download',
      });
      const traffic = await s.h.db
        .select()
        .from(portalTraffic)
        .where(and(eq(portalTraffic.userId, 'alice'), eq(portalTraffic.protocol, 'sftp')));
      expect(traffic.reduce((sum, t) => sum + t.downloadBytes, 0)).toBeGreaterThanOrEqual(big.length);
    },
  );

  it('resumes a download where the local part ends (reget)', needs('sftp'), async () => {
    fs.writeFileSync(path.join(s.work, 'part.bin'), big.subarray(0, 1_000_000));
    const r = await batch(alice.file, 'alice', ['reget /DEST/big.bin part.bin']);
    expect(r.code, r.stderr).toBe(0);
    expect(md5(fs.readFileSync(path.join(s.work, 'part.bin')))).toBe(md5(big));
    expect(inh().at(-1)).toMatchObject({ FileName: 'big.bin', BytesSent: String(big.length - 1_000_000) });
  });

  it('scp (over SFTP) copies a file', needs('scp'), async () => {
    const r = await tool(
      'scp',
      [...s.sshOptions(alice.file), 'alice@127.0.0.1:/DEST/dir/small.bin', path.join(s.work, 'scp.bin')],
      { cwd: s.work },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(md5(fs.readFileSync(path.join(s.work, 'scp.bin')))).toBe(md5(small));
  });

  it(
    'uploads, renames a temporary name to its final one, removes, and makes and removes directories',
    needs('sftp'),
    async () => {
      const local = path.join(s.work, 'up.bin');
      const bytes = bytesOf(300_000, 9);
      fs.writeFileSync(local, bytes);
      const r = await batch(alice.file, 'alice', [
        'put up.bin /DEST/in/new.bin',
        'put up.bin /DEST/in/.final.bin',
        'put up.bin /DEST/in/gone.bin',
        'rm /DEST/in/gone.bin',
        'mkdir /DEST/empty',
        'ls -1 /DEST',
        'rmdir /DEST/empty',
        '-rmdir /DEST/in',
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.toString()).toMatch(/^\/DEST\/empty$/m);
      const transfer = async (target: string) =>
        (await s.h.db.select().from(dataTransfers).where(eq(dataTransfers.target, target))).at(-1);
      expect(await transfer('in/new.bin')).toMatchObject({ destination: 'DEST', status: 'WAIT' });
      expect(await transfer('in/.final.bin')).toMatchObject({ status: 'HOLD' });
      const [file] = await s.h.db
        .select()
        .from(dataFiles)
        .where(eq(dataFiles.id, (await transfer('in/new.bin'))!.dataFileId));
      expect(file).toMatchObject({ size: 300_000, registeredBy: 'portal:alice' });
      expect(md5(fs.readFileSync(file!.source))).toBe(md5(bytes));
      expect(inh().find((l) => l.FileName === 'in/new.bin')).toMatchObject({
        Action: 'upload',
        TransferProtocol: 'sftp',
      });
      expect(await s.h.ports.repos.portal.file('DEST', 'in/gone.bin', new Date())).toBeNull();

      const renamed = await batch(alice.file, 'alice', [
        'rename /DEST/in/.final.bin /DEST/in/final.bin',
        'ls -1 /DEST/in',
      ]);
      expect(renamed.code, renamed.stderr).toBe(0);
      expect(
        renamed.stdout
          .toString()
          .split('\n')
          .filter((l) => !l.startsWith('sftp>')),
      ).toEqual(['/DEST/in/final.bin', '/DEST/in/new.bin', '']);
      const final = await s.h.ports.repos.portal.file('DEST', 'in/final.bin', new Date());
      expect(final).toMatchObject({ status: 'WAIT', size: 300_000 });
      expect(md5(fs.readFileSync(final!.source))).toBe(md5(bytes));
      expect(await s.h.ports.repos.portal.file('DEST', 'in/.final.bin', new Date())).toBeNull();
    },
  );
});

describe('temporary names of uploads', needs('ssh-keygen'), () => {
  const transfer = (destination: string, target: string) => newestTransfer(s.h, destination, target);
  const listed = (out: Buffer) =>
    out
      .toString()
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('sftp>'));

  it(
    'holds an upload under a name ending in .tmp in standby, and queues it once renamed to a final name',
    needs('sftp'),
    async () => {
      const bytes = bytesOf(250_000, 11);
      fs.writeFileSync(path.join(s.work, 'tmp-up.bin'), bytes);
      const r = await batch(alice.file, 'alice', ['put tmp-up.bin /DEST/tmp/x.bin.tmp', 'ls -1 /DEST/tmp']);
      expect(r.code, r.stderr).toBe(0);
      expect(await transfer('DEST', 'tmp/x.bin.tmp')).toMatchObject({ status: 'HOLD' });
      // Only under its temporary name: nothing of the final name is there yet, to list or to queue.
      expect(listed(r.stdout)).toEqual(['/DEST/tmp/x.bin.tmp']);
      expect(await transfer('DEST', 'tmp/x.bin')).toBeUndefined();
      expect(await s.h.ports.repos.portal.file('DEST', 'tmp/x.bin', new Date())).toBeNull();

      const renamed = await batch(alice.file, 'alice', [
        'rename /DEST/tmp/x.bin.tmp /DEST/tmp/x.bin',
        'ls -1 /DEST/tmp',
      ]);
      expect(renamed.code, renamed.stderr).toBe(0);
      expect(listed(renamed.stdout)).toEqual(['/DEST/tmp/x.bin']);
      const final = await s.h.ports.repos.portal.file('DEST', 'tmp/x.bin', new Date());
      expect(final).toMatchObject({ status: 'WAIT', size: bytes.length });
      expect(md5(fs.readFileSync(final!.source))).toBe(md5(bytes));
      expect(await s.h.ports.repos.portal.file('DEST', 'tmp/x.bin.tmp', new Date())).toBeNull();
      expect(await transfer('DEST', 'tmp/x.bin.tmp')).toMatchObject({ status: 'STOP' });
    },
  );

  it(
    "takes the destination's incoming.tmpPattern for temporary names in place of the default",
    needs('sftp'),
    async () => {
      const bytes = bytesOf(40_000, 12);
      fs.writeFileSync(path.join(s.work, 'pattern-up.bin'), bytes);
      const r = await batch(alice.file, 'alice', [
        'put pattern-up.bin /PARTS/in/a.bin.part',
        'put pattern-up.bin /PARTS/in/b.bin.tmp',
        'put pattern-up.bin /PARTS/in/.c.bin',
        'put pattern-up.bin /PARTS/in/d.part.bin',
      ]);
      expect(r.code, r.stderr).toBe(0);
      // The pattern matches whole names: a.bin.part is temporary, d.part.bin is not; .tmp and a
      // leading dot are final names here.
      expect(await transfer('PARTS', 'in/a.bin.part')).toMatchObject({ status: 'HOLD' });
      for (const name of ['b.bin.tmp', '.c.bin', 'd.part.bin']) {
        expect(await transfer('PARTS', `in/${name}`), name).toMatchObject({ status: 'WAIT' });
      }
      const renamed = await batch(alice.file, 'alice', ['rename /PARTS/in/a.bin.part /PARTS/in/a.bin']);
      expect(renamed.code, renamed.stderr).toBe(0);
      const final = await s.h.ports.repos.portal.file('PARTS', 'in/a.bin', new Date());
      expect(final).toMatchObject({ status: 'WAIT', size: bytes.length });
      expect(md5(fs.readFileSync(final!.source))).toBe(md5(bytes));
      expect(await s.h.ports.repos.portal.file('PARTS', 'in/a.bin.part', new Date())).toBeNull();

      // A pattern that does not compile is left aside: the default applies.
      const fallback = await batch(alice.file, 'alice', [
        'put pattern-up.bin /BADPAT/e.bin.tmp',
        'put pattern-up.bin /BADPAT/f.bin.part',
      ]);
      expect(fallback.code, fallback.stderr).toBe(0);
      expect(await transfer('BADPAT', 'e.bin.tmp')).toMatchObject({ status: 'HOLD' });
      expect(await transfer('BADPAT', 'f.bin.part')).toMatchObject({ status: 'WAIT' });
    },
  );
});

describe('rclone sftp remote', needs('ssh-keygen'), () => {
  it('lists the tree, copies it, and the copy checks against the sources', needs('rclone'), async () => {
    const env = rcloneSftpEnv(s.sftp.port, 'reader', reader.file);
    const listed = await tool('rclone', ['lsjson', '-R', 'portal:DEST/dir'], { env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout.toString())).toEqual([
      expect.objectContaining({ Path: 'small.bin', Size: small.length, IsDir: false }),
    ]);
    const out = path.join(s.work, 'rclone');
    const copied = await tool('rclone', ['copy', 'portal:DEST/dir', out], { env });
    expect(copied.code, copied.stderr).toBe(0);
    const checked = await tool('rclone', ['check', path.join(s.sources, 'DEST', 'dir'), out], { env });
    expect(checked.code, checked.stderr).toBe(0);
    expect(md5(fs.readFileSync(path.join(out, 'small.bin')))).toBe(md5(small));
  });
});

describe('rclone sftp remote uploading', needs('ssh-keygen'), () => {
  it('copies files into a destination with put, modification times accepted and ignored', needs('rclone'), async () => {
    const env = rcloneSftpEnv(s.sftp.port, 'alice', alice.file);
    const local = path.join(s.work, 'rclone-up');
    fs.mkdirSync(local, { recursive: true });
    const files = { 'one.bin': bytesOf(120_000, 21), 'two.txt': Buffer.from('two\n'), 'three.bin': bytesOf(7, 3) };
    for (const [name, bytes] of Object.entries(files)) fs.writeFileSync(path.join(local, name), bytes);
    const copied = await tool('rclone', ['copy', local, 'portal:DEST/rc'], { env });
    expect(copied.code, copied.stderr).toBe(0);
    const checked = await tool('rclone', ['check', '--size-only', local, 'portal:DEST/rc'], { env });
    expect(checked.code, checked.stderr).toBe(0);
    const listed = await tool('rclone', ['lsjson', 'portal:DEST/rc'], { env });
    expect(listed.code, listed.stderr).toBe(0);
    const sizes = Object.fromEntries(
      (JSON.parse(listed.stdout.toString()) as { Path: string; Size: number }[]).map((e) => [e.Path, e.Size]),
    );
    expect(sizes).toEqual({ 'one.bin': 120_000, 'two.txt': 4, 'three.bin': 7 });
    for (const [name, bytes] of Object.entries(files)) {
      const file = await s.h.ports.repos.portal.file('DEST', `rc/${name}`, new Date());
      expect(md5(fs.readFileSync(file!.source))).toBe(md5(bytes));
    }
    const { client, sftp } = await connect(s.sftp.port, { username: 'alice', password: 'Secret-1' });
    try {
      await call((done) => sftp.setstat('/DEST/rc/one.bin', { mtime: 1, atime: 1 }, done));
      await expect(
        call((done) => sftp.setstat('/OTHER/secret.txt', { mtime: 1, atime: 1 }, done)),
      ).rejects.toMatchObject({ code: 2 });
      await expect(call((done) => sftp.setstat('/DEST/rc/none', { mtime: 1, atime: 1 }, done))).rejects.toMatchObject({
        code: 2,
      });
    } finally {
      client.end();
    }
  });
});

describe('who gets in, and where', needs('ssh-keygen'), () => {
  it('takes passwords through the login check, and refuses a wrong one with a DEA line', async () => {
    expect(await logsIn(s.sftp.port, { username: 'alice', password: 'Secret-1' })).toBe(true);
    expect(await logsIn(s.sftp.port, { username: 'alice', password: 'wrong' })).toBe(false);
    expect(dea().at(-1)).toMatchObject({
      UserId: 'alice',
      Message: 'Password authentication failed',
      Context: 'sftp:127.0.0.1',
    });
  });

  it("refuses an inactive user, a user excluding sftp, and one user's key for another", needs('sftp'), async () => {
    expect(await logsIn(s.sftp.port, { username: 'carol', password: 'Secret-4' })).toBe(false);
    expect(dea().at(-1)).toMatchObject({ UserId: 'carol', Message: 'Disabled' });
    expect(await logsIn(s.sftp.port, { username: 'dave', password: 'Secret-5' })).toBe(false);
    expect(dea().at(-1)).toMatchObject({ UserId: 'dave', Message: 'Protocol sftp not allowed' });
    const deaBefore = dea().length;
    expect(await logsIn(s.sftp.port, { username: 'alice', privateKey: bob.privateKey })).toBe(false);
    expect(await logsIn(s.sftp.port, { username: 'bob', privateKey: bob.privateKey })).toBe(true);
    const r = await batch(bob.file, 'alice', ['ls /']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/Permission denied/);
    // A key offered for another account is a client trying its keys, not a failed login.
    expect(
      dea()
        .slice(deaBefore)
        .filter((l) => l.UserId === 'alice'),
    ).toEqual([]);
  });

  it("never leaves the user's tree, whatever the path", async () => {
    const { client, sftp } = await connect(s.sftp.port, { username: 'alice', password: 'Secret-1' });
    try {
      for (const p of [
        '/OTHER/secret.txt',
        '/DEST/../OTHER/secret.txt',
        '../../OTHER/secret.txt',
        '/etc/passwd',
        '../../../../etc/passwd',
        '/DEST/%2e%2e/%2e%2e/OTHER/secret.txt',
        '/DEST/..\\..\\OTHER/secret.txt',
      ]) {
        await expect(
          call((done) => sftp.open(p, 'r', done)),
          p,
        ).rejects.toMatchObject({ code: 2 });
      }
      expect(await call<string>((done) => sftp.realpath('../../..', done))).toBe('/');
      expect(await call<string>((done) => sftp.realpath('/DEST/../../x/./y', done))).toBe('/x/y');
      await expect(call((done) => sftp.readdir('/OTHER', done))).rejects.toMatchObject({ code: 2 });
    } finally {
      client.end();
    }
  });

  it('refuses what the user has no permission for', needs('sftp'), async () => {
    fs.writeFileSync(path.join(s.work, 'x.bin'), 'x');
    const r = await batch(reader.file, 'reader', ['put x.bin /DEST/x.bin']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/Permission denied/);
    const rm = await batch(reader.file, 'reader', ['rm /DEST/a.txt']);
    expect(rm.stderr).toMatch(/Permission denied/);
    expect(await s.h.ports.repos.portal.file('DEST', 'a.txt', new Date())).not.toBeNull();
  });

  it('runs no shell and no command', async () => {
    const { client } = await connect(s.sftp.port, { username: 'alice', password: 'Secret-1' });
    try {
      await expect(call((done) => client.exec('cat /etc/passwd', done))).rejects.toThrow();
      await expect(call((done) => client.shell(done))).rejects.toThrow();
      await expect(call((done) => client.forwardOut('127.0.0.1', 0, '127.0.0.1', 22, done))).rejects.toThrow();
    } finally {
      client.end();
    }
  });
});

describe('limits and large directories', needs('ssh-keygen'), () => {
  it("counts open downloads against portal.maxConnections, with the HTTPS portal's", needs('curl'), async () => {
    await s.h.ports.repos.portal.setOption('reader', 'portal.maxConnections', '1');
    const { client, sftp } = await connect(s.sftp.port, { username: 'reader', password: 'Secret-3' });
    try {
      const handle = await call<Buffer>((done) => sftp.open('/DEST/a.txt', 'r', done));
      await expect(call((done) => sftp.open('/DEST/big.bin', 'r', done))).rejects.toMatchObject({ code: 4 });
      const https = await tool('curl', [
        '-sk',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        '-u',
        'reader:Secret-3',
        `${s.url}/portal/data/DEST/a.txt`,
      ]);
      expect(https.stdout.toString()).toBe('429');
      await call((done) => sftp.close(handle, done));
      const again = await call<Buffer>((done) => sftp.open('/DEST/big.bin', 'r', done));
      await call((done) => sftp.close(again, done));
    } finally {
      client.end();
      await s.h.ports.repos.portal.setOption('reader', 'portal.maxConnections', null);
    }
  });

  it('pages a large directory through READDIR', async () => {
    for (let i = 0; i < 250; i++) {
      await putFile(s.h, s.admin, s.sources, 'DEST', `many/f${String(i).padStart(3, '0')}.txt`, Buffer.from(`${i}`));
    }
    const { client, sftp } = await connect(s.sftp.port, { username: 'alice', password: 'Secret-1' });
    try {
      const handle = await call<Buffer>((done) => sftp.opendir('/DEST/many', done));
      const first = await call<unknown[]>((done) => sftp.readdir(handle, done));
      expect(first.length).toBe(100);
      await call((done) => sftp.close(handle, done));
      const all = await call<Array<{ filename: string }>>((done) => sftp.readdir('/DEST/many', done));
      expect(all.map((e) => e.filename)).toEqual(
        Array.from({ length: 250 }, (_, i) => `f${String(i).padStart(3, '0')}.txt`),
      );
    } finally {
      client.end();
    }
  });
});
