import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { methodOptions } from '../core/dissemination/method-options.ts';
import type { HostConnection, TransferMethod } from '../core/dissemination/methods.ts';
import { ftpMethod } from '../functions/transfer-methods/ftp.ts';
import { freePort } from './support/processes.ts';
import { type Proftpd, proftpdAvailability, startProftpd } from './support/servers/proftpd.ts';

const availability = proftpdAvailability();
let server: Proftpd;
const methods: TransferMethod[] = [];
const method = (...args: Parameters<typeof ftpMethod>) => {
  const m = ftpMethod(...args);
  methods.push(m);
  return m;
};

beforeAll(async () => {
  if (availability.run) server = await startProftpd();
});
afterAll(async () => {
  await Promise.all(methods.map((m) => m.close()));
  await server?.stop();
});

const payload = (n: number, seed = 7) => {
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i++) bytes[i] = (i * 31 + seed) % 251;
  return bytes;
};
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
async function* chunks(bytes: Uint8Array, size = 64 * 1024, pause?: (i: number) => Promise<void>) {
  for (let at = 0, i = 0; at < bytes.byteLength; at += size, i++) {
    if (pause) await pause(i);
    yield bytes.subarray(at, at + size);
  }
}
const never = () => new AbortController().signal;

/** A host on the test server; `data` holds the method's options as an operator writes them. */
function host(kind: 'ftp' | 'ftps', directory: string, data = '', over: Partial<HostConnection> = {}): HostConnection {
  const implicit = /connectionType\s*=\s*"FTPS"/.test(data);
  const port = implicit ? server.tlsPort : server.port;
  return {
    hostId: 'h1',
    hostname: '127.0.0.1',
    login: server.user,
    password: server.password,
    directory,
    options: methodOptions(kind, `127.0.0.1:${port}`, data),
    ...over,
  };
}
/** Every file under a directory of the server's root, relative to it. */
const filesIn = (dir: string) =>
  fs
    .readdirSync(path.join(server.root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(path.join(server.root, dir), path.join(e.parentPath, e.name)))
    .sort();
const read = (file: string) => new Uint8Array(fs.readFileSync(path.join(server.root, file)));

describe.skipIf(!availability.run)(`ftp and ftps against ProFTPD ${availability.reason}`, () => {
  it('delivers a file under its target, creating the directories, with no temporary file left', async () => {
    const bytes = payload(3 * 1024 * 1024 + 17);
    const ftp = method('ftp');
    const done = await ftp.send(
      host('ftp', 'in/deliver'),
      { target: 'a/b/f.grib', size: bytes.byteLength },
      chunks(bytes),
      never(),
    );
    expect(done).toEqual({ sent: bytes.byteLength, md5: md5(bytes) });
    expect(md5(read('in/deliver/a/b/f.grib'))).toBe(md5(bytes));
    expect(filesIn('in/deliver')).toEqual(['a/b/f.grib']);
  });

  it('replaces a file delivered before under the same name', async () => {
    server.plant('in/replace/f.bin', 'an older and longer content than the new one');
    const bytes = payload(10, 3);
    await method('ftp').send(host('ftp', 'in/replace'), { target: 'f.bin', size: 10 }, chunks(bytes), never());
    expect(read('in/replace/f.bin')).toEqual(bytes);
    expect(filesIn('in/replace')).toEqual(['f.bin']);
  });

  it('writes straight to the final name with ftp.usetmp=no', async () => {
    const bytes = payload(50_000);
    const seen: string[] = [];
    // Watch the directory while the upload runs: the final name is the only one ever there.
    const source = chunks(bytes, 10_000, async () => void seen.push(...safeList('in/direct')));
    const h = host('ftp', 'in/direct', 'ftp.usetmp = "no"');
    await method('ftp').send(h, { target: 'f.bin', size: bytes.byteLength }, source, never());
    expect(read('in/direct/f.bin')).toEqual(bytes);
    expect(new Set(seen.filter((n) => n !== 'f.bin'))).toEqual(new Set());
  });

  it("says why the server refused the upload, with the server's reply", async () => {
    const h = host('ftp', 'in/missing', 'ftp.mkdirs = "no"');
    const attempt = method('ftp').send(h, { target: 'f', size: 3 }, chunks(payload(3)), never());
    await expect(attempt).rejects.toThrow(
      'Upload to in/missing/f.tmp failed: 550 in/missing/f.tmp: No such file or directory',
    );
  });

  it('checks the remote size with ftp.ignoreCheck=no', async () => {
    const bytes = payload(123_457);
    const h = host('ftp', 'in/check', 'ftp.ignoreCheck = "no"');
    expect(h.options.ignoreCheck).toBe(false);
    const done = await method('ftp').send(h, { target: 'f.bin', size: bytes.byteLength }, chunks(bytes), never());
    expect(done.sent).toBe(123_457);
    expect(read('in/check/f.bin')).toEqual(bytes);
  });

  it('delivers over explicit TLS to a self-signed certificate, and refuses it when ftps.strict is set', async () => {
    const bytes = payload(200_000);
    const ftps = method('ftps');
    const done = await ftps.send(host('ftps', 'in/tls'), { target: 'f.bin', size: 200_000 }, chunks(bytes), never());
    expect(done.md5).toBe(md5(bytes));
    expect(read('in/tls/f.bin')).toEqual(bytes);

    const strict = host('ftps', 'in/tls', 'ftps.strict = "yes"');
    const refused = ftps.send(strict, { target: 'g.bin', size: 200_000 }, chunks(bytes), never());
    await expect(refused).rejects.toThrow(
      `TLS negotiation with 127.0.0.1:${server.port} failed: self-signed certificate ` +
        '(ftps.strict is set: the certificate is verified)',
    );
    expect(filesIn('in/tls')).toEqual(['f.bin']);
  });

  it('delivers over implicit TLS (ftps.connectionType=FTPS)', async () => {
    const bytes = payload(70_000);
    const h = host('ftps', 'in/implicit', 'ftps.connectionType = "FTPS"');
    await method('ftps').send(h, { target: 'f.bin', size: 70_000 }, chunks(bytes), never());
    expect(read('in/implicit/f.bin')).toEqual(bytes);
  });

  it('says the login failed, without the password', async () => {
    const password = 'wrong-secret-4711';
    const h = host('ftp', 'in/x', '', { password });
    const attempt = method('ftp').send(h, { target: 'f', size: 1 }, chunks(payload(1)), never());
    const error = await attempt.then(
      () => null,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(new RegExp(`^Login failed for ${server.user}: 530 `));
    expect(error?.message).not.toContain(password);
  });

  it('says the connection failed when nothing listens', async () => {
    const port = await freePort();
    const h = { ...host('ftp', 'in/x'), options: methodOptions('ftp', `127.0.0.1:${port}`, '') };
    const attempt = method('ftp').send(h, { target: 'f', size: 1 }, chunks(payload(1)), never());
    await expect(attempt).rejects.toThrow(new RegExp(`^Connection to 127\\.0\\.0\\.1:${port} failed: .*ECONNREFUSED`));
  });

  it('sends 20 files one after the other on one control connection', async () => {
    let connections = 0;
    const ftp = method('ftp', { onConnect: () => void connections++ });
    for (let i = 0; i < 20; i++) {
      const bytes = payload(1000 + i, i);
      const done = await ftp.send(
        host('ftp', 'in/reuse'),
        { target: `d/f${i}`, size: bytes.byteLength },
        chunks(bytes),
        never(),
      );
      expect(done.md5).toBe(md5(bytes));
    }
    expect(connections).toBe(1);
    expect(filesIn('in/reuse')).toHaveLength(20);
  });

  it('opens a new session when an idle one was closed, and closes idle sessions after idleMs', async () => {
    let connections = 0;
    const ftp = method('ftp', { idleMs: 200, onConnect: () => void connections++ });
    const send = (name: string) =>
      ftp.send(host('ftp', 'in/idle'), { target: name, size: 3 }, chunks(payload(3)), never());
    await send('a');
    await new Promise((r) => setTimeout(r, 500));
    await send('b');
    expect(connections).toBe(2);
  });

  it('sends again on a new session when a reused one no longer answers, before reading the source', async () => {
    const proxy = await freezableProxy(server.port);
    try {
      let connections = 0;
      const ftp = method('ftp', { onConnect: () => void connections++ });
      const data = 'ectrans.connectTimeOut = "500ms"';
      const h = { ...host('ftp', 'in/dead', data), options: methodOptions('ftp', `127.0.0.1:${proxy.port}`, data) };
      await ftp.send(h, { target: 'a', size: 3 }, chunks(payload(3)), never());
      // The session's connection stays open but nothing goes through any more (a dropped NAT entry).
      proxy.freeze();
      const bytes = payload(5_000);
      const done = await ftp.send(h, { target: 'b', size: 5_000 }, chunks(bytes), never());
      expect(done.md5).toBe(md5(bytes));
      expect(connections).toBe(2);
      expect(read('in/dead/b')).toEqual(bytes);
    } finally {
      proxy.close();
    }
  });

  it('stops promptly when aborted mid-stream, leaving neither the final nor the temporary file', async () => {
    const abort = new AbortController();
    const bytes = payload(8 * 1024 * 1024);
    const source = chunks(bytes, 64 * 1024, async (i) => {
      if (i === 20) abort.abort(new Error('deleted by the operator'));
      // A slow source: the abort has to end the upload, not the end of the data.
      if (i >= 20) await new Promise((r) => setTimeout(r, 1_000));
    });
    const started = Date.now();
    const ftp = method('ftp');
    const attempt = ftp.send(
      host('ftp', 'in/abort'),
      { target: 'f.bin', size: bytes.byteLength },
      source,
      abort.signal,
    );
    await expect(attempt).rejects.toThrow('deleted by the operator');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(filesIn('in/abort')).toEqual([]);
  });
});

/** A TCP relay to `port`; `freeze` stops relaying on the connections open so far, without closing them. */
async function freezableProxy(port: number) {
  const open = new Set<net.Socket>();
  const all: net.Socket[] = [];
  const relay = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      open.add(s);
      all.push(s);
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return {
    port: (relay.address() as net.AddressInfo).port,
    freeze() {
      for (const s of open) {
        s.unpipe();
        s.pause();
      }
      open.clear();
    },
    close() {
      for (const s of all) s.destroy();
      relay.close();
    },
  };
}

function safeList(dir: string): string[] {
  try {
    return fs.readdirSync(path.join(server.root, dir));
  } catch {
    return [];
  }
}
