import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { methodOptions } from '../core/dissemination/method-options.ts';
import type { HostConnection } from '../core/dissemination/methods.ts';
import { setOption } from '../core/hosts/options.ts';
import { type SftpMethod, sftpMethod } from '../functions/transfer-methods/sftp.ts';
import { fingerprintsOf } from '../functions/transfer-methods/sftp-session.ts';
import { type FaultServer, startFaultServer } from './support/servers/sftp-faults.ts';
import { type Sshd, sshdMissing, startSshd } from './support/servers/sshd.ts';

async function* chunks(bytes: Uint8Array, size = 64 * 1024, pause?: () => Promise<void>) {
  for (let at = 0; at < bytes.byteLength; at += size) {
    if (pause) await pause();
    yield bytes.subarray(at, at + size);
  }
}
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const live = () => new AbortController().signal;
/** Every file under a directory, relative to it. */
const filesIn = (dir: string) =>
  fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();

interface HostSetup {
  port: number;
  login: string;
  password: string | null;
  directory: string;
  data?: string;
}
const hostOf = (setup: HostSetup): HostConnection => ({
  hostId: 'h1',
  hostname: '127.0.0.1',
  login: setup.login,
  password: setup.password,
  directory: setup.directory,
  options: methodOptions('sftp', `127.0.0.1:${setup.port}`, setup.data ?? ''),
});
/** Host options as the `data` field holds them, one per line. */
const data = (options: Record<string, string>) =>
  Object.entries(options).reduce((text, [name, value]) => setOption(text, name, value), '');

const missing = sshdMissing();

describe.skipIf(missing !== null)(
  `the sftp method against OpenSSH sshd${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    let sshd: Sshd;
    let method: SftpMethod;
    beforeAll(async () => {
      sshd = await startSshd();
      method = sftpMethod();
    });
    afterAll(async () => {
      await method?.close();
      await sshd?.stop();
    });
    const host = (over: Partial<HostSetup> = {}) =>
      hostOf({ port: sshd.port, login: sshd.user, password: sshd.password, directory: sshd.scratch(), ...over });

    it('delivers the bytes under the target, creating subdirectories, and leaves no temporary file', async () => {
      const target = host();
      const bytes = randomBytes(3_000_000);
      const done = await method.send(
        target,
        { target: 'products/today/a.grib', size: bytes.length },
        chunks(bytes),
        live(),
      );
      expect(done).toEqual({ sent: bytes.length, md5: md5(bytes) });
      const landed = fs.readFileSync(path.join(target.directory, 'products/today/a.grib'));
      expect(md5(landed)).toBe(md5(bytes));
      expect(filesIn(target.directory)).toEqual(['products/today/a.grib']);
    });

    it('replaces an earlier delivery of the same target', async () => {
      const target = host();
      await method.send(target, { target: 'a.bin', size: 5 }, chunks(Buffer.from('first')), live());
      const bytes = randomBytes(100_000);
      await method.send(target, { target: 'a.bin', size: bytes.length }, chunks(bytes), live());
      expect(md5(fs.readFileSync(path.join(target.directory, 'a.bin')))).toBe(md5(bytes));
      expect(filesIn(target.directory)).toEqual(['a.bin']);
    });

    it('writes relative to the login home when the directory is relative', async () => {
      const dir = path.basename(sshd.scratch());
      await method.send(host({ directory: dir }), { target: 'x/y.txt', size: 2 }, chunks(Buffer.from('hi')), live());
      expect(fs.readFileSync(path.join(sshd.home, dir, 'x/y.txt'), 'utf8')).toBe('hi');
    });

    it('logs in with a private key alone, and checks the host key fingerprint in either form', async () => {
      const keyOnly = sftpMethod();
      try {
        const offered = fingerprintsOf(hostPublicKey(sshd));
        for (const fingerPrint of [`SHA256:${offered.sha256}`, offered.md5.replace(/(..)(?!$)/g, '$1:')]) {
          const target = host({
            password: null,
            data: data({ 'sftp.privateKey': sshd.privateKey, 'sftp.fingerPrint': fingerPrint }),
          });
          await keyOnly.send(target, { target: 'k.txt', size: 3 }, chunks(Buffer.from('key')), live());
          expect(fs.readFileSync(path.join(target.directory, 'k.txt'), 'utf8')).toBe('key');
        }
        const wrong = host({
          data: data({ 'sftp.fingerPrint': 'SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }),
        });
        await expect(
          keyOnly.send(wrong, { target: 'n.txt', size: 1 }, chunks(Buffer.from('n')), live()),
        ).rejects.toThrow(/Host key of 127\.0\.0\.1:\d+ does not match sftp\.fingerPrint: the server offers SHA256:/);
        expect(filesIn(wrong.directory)).toEqual([]);
      } finally {
        await keyOnly.close();
      }
    });

    it('says which login failed, without the password, when the password is wrong', async () => {
      const secret = 'not-the-Password-42';
      const attempt = method.send(
        host({ password: secret }),
        { target: 'a', size: 1 },
        chunks(Buffer.from('a')),
        live(),
      );
      const error = await attempt.catch((e: Error) => e);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/^Authentication failed for ecpdstest@127\.0\.0\.1:\d+$/);
      expect((error as Error).message).not.toContain(secret);
    });

    it('says where it could not connect', async () => {
      const { freePort } = await import('./support/processes.ts');
      const closed = await freePort();
      const attempt = method.send(host({ port: closed }), { target: 'a', size: 1 }, chunks(Buffer.from('a')), live());
      await expect(attempt).rejects.toThrow(`Connection to 127.0.0.1:${closed} failed: connect ECONNREFUSED`);
    });

    it('reuses one SSH session for small files sent one after the other', async () => {
      const reuse = sftpMethod();
      try {
        const target = host();
        const before = sshd.accepted();
        for (let i = 0; i < 20; i++) {
          const bytes = randomBytes(2_000 + i);
          await reuse.send(target, { target: `small/${i}.txt`, size: bytes.length }, chunks(bytes), live());
        }
        expect(reuse.stats()).toMatchObject({ connections: 1, reused: 19, idle: 1 });
        await expect.poll(() => sshd.accepted() - before).toBe(1);
        expect(filesIn(target.directory)).toHaveLength(20);
      } finally {
        await reuse.close();
      }
      expect(reuse.stats().idle).toBe(0);
    });

    it('closes an idle session after idleMs', async () => {
      const brief = sftpMethod({ idleMs: 50 });
      await brief.send(host(), { target: 'a', size: 1 }, chunks(Buffer.from('a')), live());
      expect(brief.stats().idle).toBe(1);
      await expect.poll(() => brief.stats().idle).toBe(0);
      await brief.send(host(), { target: 'b', size: 1 }, chunks(Buffer.from('b')), live());
      expect(brief.stats()).toMatchObject({ connections: 2, reused: 0 });
      await brief.close();
    });

    it('stops a large send when aborted, promptly, leaving no final file and no session', async () => {
      const target = host();
      const abort = new AbortController();
      const bytes = randomBytes(64 * 1024 * 1024);
      let sent = 0;
      const source = chunks(bytes, 64 * 1024, async () => {
        if ((sent += 64 * 1024) === 8 * 1024 * 1024) setTimeout(() => abort.abort(new Error('deleted')), 0);
      });
      const startedAt = Date.now();
      const connectionsBefore = method.stats().connections;
      await expect(
        method.send(target, { target: 'big.bin', size: bytes.length }, source, abort.signal),
      ).rejects.toThrow('deleted');
      expect(Date.now() - startedAt).toBeLessThan(5_000);
      expect(filesIn(target.directory)).not.toContain('big.bin');
      // The aborted session is not handed to the next send.
      await method.send(target, { target: 'next', size: 1 }, chunks(Buffer.from('n')), live());
      expect(method.stats().connections).toBeGreaterThan(connectionsBefore);
    });

    it('writes under the final name directly with usetmp=no, and honours a custom suffix and chmod', async () => {
      const direct = host({ data: data({ 'sftp.usetmp': 'no' }) });
      const seen: string[] = [];
      const watcher = fs.watch(direct.directory, (_event, name) => name && seen.push(name));
      await method.send(direct, { target: 'd.bin', size: 4 }, chunks(Buffer.from('data')), live());
      watcher.close();
      expect(seen.every((name) => name === 'd.bin')).toBe(true);
      expect(filesIn(direct.directory)).toEqual(['d.bin']);

      const suffixed = host({ data: data({ 'sftp.suffix': '.part', 'sftp.chmod': '640' }) });
      const names: string[] = [];
      const watching = fs.watch(suffixed.directory, (_event, name) => name && names.push(name));
      await method.send(suffixed, { target: 's.bin', size: 4 }, chunks(Buffer.from('data')), live());
      watching.close();
      expect(names).toContain('s.bin.part');
      expect(filesIn(suffixed.directory)).toEqual(['s.bin']);
      expect(fs.statSync(path.join(suffixed.directory, 's.bin')).mode & 0o777).toBe(0o640);
    });
  },
);

/** The sshd's host key blob, as its .pub file holds it. */
function hostPublicKey(sshd: Sshd): Buffer {
  const pub = fs.readFileSync(path.join(path.dirname(sshd.privateKeyFile), 'host_ed25519.pub'), 'utf8');
  return Buffer.from(pub.split(' ')[1]!, 'base64');
}

describe('the sftp method against a misbehaving server', () => {
  let server: FaultServer;
  let method: SftpMethod;
  beforeAll(async () => {
    server = await startFaultServer();
    method = sftpMethod();
  });
  afterAll(async () => {
    await method?.close();
    await server?.stop();
  });
  const host = (data = '') =>
    hostOf({ port: server.port, login: server.user, password: server.password, directory: '', data });
  const withFaults = async (faults: FaultServer['faults'], run: () => Promise<void>) => {
    server.faults = faults;
    try {
      await run();
    } finally {
      server.faults = {};
      for (const name of server.files()) fs.rmSync(path.join(server.root, name));
    }
  };

  it('delivers, renaming the plain way over an earlier file, when nothing goes wrong', async () => {
    const bytes = randomBytes(500_000);
    await method.send(host(), { target: 'ok.bin', size: bytes.length }, chunks(bytes), live());
    await method.send(host(), { target: 'ok.bin', size: bytes.length }, chunks(bytes), live());
    expect(md5(fs.readFileSync(path.join(server.root, 'ok.bin')))).toBe(md5(bytes));
    expect(server.files()).toEqual(['ok.bin']);
    fs.rmSync(path.join(server.root, 'ok.bin'));
  });

  it('fails when the connection drops mid-stream, leaving no final file', () =>
    withFaults({ dropAfterBytes: 300_000 }, async () => {
      const bytes = randomBytes(1_000_000);
      const attempt = method.send(host(), { target: 'drop.bin', size: bytes.length }, chunks(bytes), live());
      await expect(attempt).rejects.toThrow(/^Connection to 127\.0\.0\.1:\d+ (lost|closed)/);
      expect(server.files()).not.toContain('drop.bin');
    }));

  it('gives up on a stalled server when aborted, promptly, leaving no final file', () =>
    withFaults({ stallWrites: true }, async () => {
      const bytes = randomBytes(1_000_000);
      const abort = new AbortController();
      const attempt = method.send(host(), { target: 'stall.bin', size: bytes.length }, chunks(bytes), abort.signal);
      setTimeout(() => abort.abort(new Error('stopped by the operator')), 300);
      const startedAt = Date.now();
      await expect(attempt).rejects.toThrow('stopped by the operator');
      expect(Date.now() - startedAt).toBeLessThan(2_500);
      expect(server.files()).not.toContain('stall.bin');
      await expect.poll(() => server.open()).toBe(0);
    }));

  it('times out a stalled put after ectrans.putTimeOut', () =>
    withFaults({ stallWrites: true }, async () => {
      const attempt = method.send(
        host('ectrans.putTimeOut="300ms"'),
        { target: 't.bin', size: 100_000 },
        chunks(randomBytes(100_000)),
        live(),
      );
      await expect(attempt).rejects.toThrow('Put timed out after 300 ms');
    }));

  it('aborts when the server reports another size, leaving no final file', () =>
    withFaults({ sizeOffBy: -250_000 }, async () => {
      const bytes = randomBytes(1_000_000);
      const attempt = method.send(host(), { target: 'size.bin', size: bytes.length }, chunks(bytes), live());
      await expect(attempt).rejects.toThrow('Transfer aborted at 75%');
      expect(server.files()).toEqual([]);
    }));

  it('fails when the rename is refused, leaving neither the final nor the temporary file', () =>
    withFaults({ refuseRename: true }, async () => {
      const bytes = randomBytes(10_000);
      const attempt = method.send(host(), { target: 'r.bin', size: bytes.length }, chunks(bytes), live());
      await expect(attempt).rejects.toThrow('Cannot rename r.bin.tmp to r.bin: Rename refused');
      expect(server.files()).toEqual([]);
    }));

  it('opens a fresh connection after a failed send, and reuses healthy ones', async () => {
    const before = server.connections();
    await withFaults({ refuseRename: true }, async () => {
      await method.send(host(), { target: 'x', size: 1 }, chunks(Buffer.from('x')), live()).catch(() => undefined);
    });
    for (let i = 0; i < 5; i++)
      await method.send(host(), { target: `f${i}`, size: 1 }, chunks(Buffer.from('f')), live());
    // One for the failed send, one for the five that followed it.
    expect(server.connections() - before).toBe(2);
    expect(server.files()).toHaveLength(5);
  });
});
