import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListedEntry } from '../../core/acquisition/selection.ts';
import { methodOptions } from '../../core/dissemination/method-options.ts';
import type { HostConnection, TransferMethod } from '../../core/dissemination/methods.ts';
import { ftpMethod } from '../../functions/transfer-methods/ftp.ts';
import { parseMlsd, parseUnixListing } from '../../functions/transfer-methods/ftp-list.ts';
import { type Proftpd, proftpdAvailability, startProftpd } from '../support/servers/proftpd.ts';

/** An Acquisition host's directory listed over FTP and FTPS, entry by entry, against ProFTPD. */
const availability = proftpdAvailability();
const live = () => new AbortController().signal;
const OLD = new Date('2020-02-03T04:05:06Z');

let server: Proftpd;
const ftpMethodUnderTest = ftpMethod('ftp');
const ftpsMethodUnderTest = ftpMethod('ftps');
/** The method's `list` and `fetch`, which the ftp methods have. */
const calls = (method: TransferMethod) => ({
  list: (h: HostConnection, directory: string, signal: AbortSignal) => {
    if (!method.list) throw new Error('no list');
    return method.list(h, directory, signal);
  },
  fetch: (h: HostConnection, file: string, signal: AbortSignal) => {
    if (!method.fetch) throw new Error('no fetch');
    return method.fetch(h, file, signal);
  },
});
const ftp = calls(ftpMethodUnderTest);
const ftps = calls(ftpsMethodUnderTest);

beforeAll(async () => {
  if (availability.run) server = await startProftpd();
});
afterAll(async () => {
  await Promise.all([ftpMethodUnderTest.close(), ftpsMethodUnderTest.close()]);
  await server?.stop();
});

function host(kind: 'ftp' | 'ftps', over: { port?: number; data?: string; password?: string } = {}): HostConnection {
  const port = over.port ?? server.port;
  return {
    hostId: 'acq',
    hostname: '127.0.0.1',
    login: server.user,
    password: over.password ?? server.password,
    directory: '',
    options: methodOptions(kind, `127.0.0.1:${port}`, over.data ?? ''),
  };
}

/** A directory under the server's root with a file of an old time, a recent one, a subdirectory and a link. */
function plantDirectory(dir: string, recent: Date) {
  const at = (name: string) => path.join(server.root, dir, name);
  server.plant(`${dir}/a.grib2`, Buffer.alloc(1234, 7));
  fs.utimesSync(at('a.grib2'), OLD, OLD);
  server.plant(`${dir}/with space.bin`, 'recent');
  fs.utimesSync(at('with space.bin'), recent, recent);
  fs.mkdirSync(at('sub'));
  fs.symlinkSync('a.grib2', at('link.grib2'));
}

const byName = (entries: ListedEntry[]) => Object.fromEntries(entries.map((e) => [e.name, e]));
const toMinute = (time: Date) => new Date(Math.floor(time.getTime() / 60_000) * 60_000);

async function readAll(stream: AsyncIterable<Uint8Array>) {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe.skipIf(!availability.run)(`listing over ftp and ftps ${availability.reason}`, () => {
  it('lists files with their size and time to the second (MLSD), directories and links as links', async () => {
    const recent = new Date(Math.floor(Date.now() / 1000) * 1000 - 10 * 60_000);
    plantDirectory('mlsd', recent);
    const entries = await ftp.list(host('ftp'), 'mlsd', live());
    const found = byName(entries);
    expect(Object.keys(found).sort()).toEqual(['a.grib2', 'link.grib2', 'sub', 'with space.bin']);
    expect(found['a.grib2']).toEqual({ name: 'a.grib2', type: 'file', size: 1234, time: OLD });
    expect(found['with space.bin']).toEqual({ name: 'with space.bin', type: 'file', size: 6, time: recent });
    expect(found.sub).toMatchObject({ type: 'directory' });
    expect(found['link.grib2']).toMatchObject({ type: 'symlink' });
    // Absolute or relative to the login's home (its `/` here): the same directory.
    expect(await ftp.list(host('ftp'), '/mlsd', live())).toEqual(entries);
  });

  it('lists what fetch then reads at `<directory>/<name>`', async () => {
    server.plant('agree/f1.bin', Buffer.alloc(5000, 1));
    server.plant('agree/f2.bin', Buffer.alloc(3, 2));
    for (const directory of ['agree', '/agree']) {
      const entries = await ftp.list(host('ftp'), directory, live());
      expect(entries.map((e) => e.name).sort()).toEqual(['f1.bin', 'f2.bin']);
      for (const entry of entries) {
        const { size, stream } = await ftp.fetch(host('ftp'), `${directory}/${entry.name}`, live());
        expect(size).toBe(entry.size);
        expect(await readAll(stream)).toEqual(fs.readFileSync(path.join(server.root, 'agree', entry.name)));
      }
    }
  });

  it('lists the same over explicit and implicit TLS', async () => {
    plantDirectory('tls', new Date(Date.now() - 60_000));
    const plain = await ftp.list(host('ftp'), 'tls', live());
    expect(await ftps.list(host('ftps'), 'tls', live())).toEqual(plain);
    const implicit = host('ftps', { port: server.tlsPort, data: 'ftps.connectionType = "FTPS"' });
    expect(await ftps.list(implicit, 'tls', live())).toEqual(plain);
  });

  it('falls back to LIST when the server refuses MLSD, reading its `ls -l` lines', async () => {
    const recent = new Date(Date.now() - 10 * 60_000);
    plantDirectory('fallback', recent);
    const relay = await controlRelay(server.port, 'refuse');
    try {
      const entries = await ftp.list(host('ftp', { port: relay.port }), 'fallback', live());
      const found = byName(entries);
      expect(relay.mlsdSeen()).toBe(true);
      expect(Object.keys(found).sort()).toEqual(['a.grib2', 'link.grib2', 'sub', 'with space.bin']);
      // An old file shows its year and no time of day; a recent one its time of day to the minute.
      expect(found['a.grib2']).toEqual({ name: 'a.grib2', type: 'file', size: 1234, time: new Date('2020-02-03Z') });
      expect(found['with space.bin']).toEqual({
        name: 'with space.bin',
        type: 'file',
        size: 6,
        time: toMinute(recent),
      });
      expect(found.sub).toMatchObject({ type: 'directory' });
      // `link.grib2 -> a.grib2`: the name only.
      expect(found['link.grib2']).toMatchObject({ name: 'link.grib2', type: 'symlink' });
      await expect(ftp.list(host('ftp', { port: relay.port }), 'nowhere', live())).rejects.toThrow(
        'No such directory nowhere',
      );
    } finally {
      relay.close();
    }
  });

  it('a missing directory fails with its name; a wrong password never shows in the reason', async () => {
    await expect(ftp.list(host('ftp'), '/no/such/place', live())).rejects.toThrow('No such directory /no/such/place');
    const wrong = 'not-the-password-123';
    for (const [method, kind] of [
      [ftp, 'ftp'],
      [ftps, 'ftps'],
    ] as const) {
      const failure = await method.list(host(kind, { password: wrong }), 'mlsd', live()).catch((e: Error) => e);
      expect(failure).toBeInstanceOf(Error);
      expect((failure as Error).message).toMatch(new RegExp(`^Login failed for ${server.user}: 530 `));
      expect((failure as Error).message).not.toContain(wrong);
    }
  });

  it('an aborted listing rejects with the reason, at once, and its connection is closed', async () => {
    const cut = new AbortController();
    cut.abort(new Error('run cut at maximumDuration'));
    await expect(ftp.list(host('ftp'), 'mlsd', cut.signal)).rejects.toThrow('maximumDuration');

    server.plant('held/f.bin', 'f');
    // The server never sees the MLSD, so never answers it: only the abort ends the listing.
    const relay = await controlRelay(server.port, 'hold');
    try {
      const controller = new AbortController();
      const listing = ftp.list(host('ftp', { port: relay.port }), 'held', controller.signal);
      const outcome = listing.catch((e: Error) => e);
      await relay.mlsdSent;
      const at = Date.now();
      controller.abort(new Error('deleted by the operator'));
      expect(await outcome).toMatchObject({ message: 'deleted by the operator' });
      expect(Date.now() - at).toBeLessThan(1_000);
      await relay.clientClosed();
    } finally {
      relay.close();
    }
  });
});

describe('the listing parsers', () => {
  it('reads ProFTPD `ls -l` lines: recent ones in the year that is not ahead, old ones on their day', () => {
    const text = [
      'total 12',
      '-rw-r--r--   1 ecpds    ecpds        1234 Jan  2  2026 a.grib2',
      'lrwxrwxrwx   1 0        0               7 Dec  7 10:33 link.grib2 -> a.grib2',
      'drwxr-xr-x   2 0        0            4096 Dec  7 10:33 sub',
      '-rw-r--r--   1 ecpds    ecpds           1 Dec  7 10:33 with space.bin',
      'crw-rw-rw-   1 root     root        1,   3 Nov 30 09:00 null',
      'drwxr-xr-x   2 ecpds    ecpds        4096 Dec  7 10:33 .',
      '',
    ].join('\r\n');
    const entries = parseUnixListing(text, new Date('2026-12-07T12:00:00Z'));
    expect(entries).toEqual([
      { name: 'a.grib2', type: 'file', size: 1234, time: new Date('2026-01-02T00:00:00Z') },
      { name: 'link.grib2', type: 'symlink', size: 7, time: new Date('2026-12-07T10:33:00Z') },
      { name: 'sub', type: 'directory', size: 4096, time: new Date('2026-12-07T10:33:00Z') },
      { name: 'with space.bin', type: 'file', size: 1, time: new Date('2026-12-07T10:33:00Z') },
      { name: 'null', type: 'other', size: null, time: new Date('2026-11-30T09:00:00Z') },
    ]);
    // Listed in the first days of a year, December's times are the year before's.
    const january = parseUnixListing(text, new Date('2027-01-03T00:00:00Z'));
    expect(january[1]?.time).toEqual(new Date('2026-12-07T10:33:00Z'));
    expect(() => parseUnixListing('01-02-26  03:04AM   1234 a.grib2', new Date())).toThrow(
      'Unrecognised LIST line: 01-02-26  03:04AM   1234 a.grib2',
    );
  });

  it('reads MLSD facts, the current and parent directories left out', () => {
    const text = [
      'modify=20261207103345;type=cdir;unique=FE00U20C032;UNIX.mode=0755; .',
      'modify=20261207103345;type=pdir;unique=FE00U20C012;UNIX.mode=0755; ..',
      'modify=20260102030405.250;size=1234;type=file;UNIX.mode=0644; a b;c.grib2',
      'Modify=20261207103345;Size=7;Type=OS.unix=slink:/elsewhere/x; x',
      'modify=20261207103345;type=OS.unix=chr-1/3; null',
      ' bare',
    ].join('\r\n');
    expect(parseMlsd(text)).toEqual([
      { name: 'a b;c.grib2', type: 'file', size: 1234, time: new Date('2026-01-02T03:04:05.250Z') },
      { name: 'x', type: 'symlink', size: 7, time: new Date('2026-12-07T10:33:45Z') },
      { name: 'null', type: 'other', size: null, time: new Date('2026-12-07T10:33:45Z') },
      { name: 'bare', type: 'other', size: null, time: null },
    ]);
  });
});

/**
 * A relay of the control connection to `port` that alters the client's MLSD: `refuse` sends it
 * renamed, which the server refuses (500, not understood); `hold` keeps it, so it is never answered.
 * Data connections go to the server directly (its passive replies name its own address).
 */
async function controlRelay(port: number, mode: 'refuse' | 'hold') {
  let seen = false;
  let onMlsd: () => void = () => undefined;
  const mlsdSent = new Promise<void>((resolve) => {
    onMlsd = resolve;
  });
  const sockets: net.Socket[] = [];
  const closings: Promise<void>[] = [];
  const relay = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.push(socket);
      socket.on('error', () => undefined);
    }
    closings.push(new Promise((resolve) => client.once('close', () => resolve())));
    upstream.pipe(client);
    client.on('end', () => upstream.end());
    let pending = '';
    client.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      for (let end = pending.indexOf('\r\n'); end >= 0; end = pending.indexOf('\r\n')) {
        const line = pending.slice(0, end + 2);
        pending = pending.slice(end + 2);
        if (!/^MLSD\b/i.test(line)) upstream.write(line);
        else {
          seen = true;
          onMlsd();
          if (mode === 'refuse') upstream.write(`X${line}`);
        }
      }
    });
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return {
    port: (relay.address() as net.AddressInfo).port,
    mlsdSent,
    mlsdSeen: () => seen,
    /** Resolves once every client connection so far has closed. */
    clientClosed: () => Promise.all(closings),
    close() {
      for (const socket of sockets) socket.destroy();
      relay.close();
    },
  };
}
