import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { methodOptions } from '../../core/dissemination/method-options.ts';
import type { HostConnection } from '../../core/dissemination/methods.ts';
import { ftpMethod } from '../../functions/transfer-methods/ftp.ts';
import { type Proftpd, proftpdAvailability, startProftpd } from '../support/servers/proftpd.ts';
import { heldByTheServer } from '../support/servers/tcp-states.ts';
import { scaled } from '../support/time.ts';
import { chunks, payload, stallingSource } from '../support/transfer.ts';

/**
 * When a failed FTP send ends, measured at a ProFTPD of this file's own: the next attempt may start
 * as soon as the send has ended, so by then the server must have ended the session that was writing
 * the file, and closed its connection (the kernel's state of the server's end of each connection).
 * The control connections pass through a relay that hands a client's close on to the server only
 * after a while, as a long way to the server would: a client that merely closes its end has not
 * ended the session by the time it moves on.
 */
const availability = proftpdAvailability();
let server: Proftpd;
let relay: LateCloseRelay;

beforeAll(async () => {
  if (!availability.run) return;
  server = await startProftpd();
  relay = await lateCloseRelay(server.port, 1_000);
});
afterAll(async () => {
  await relay?.stop();
  await server?.stop();
});

const never = () => new AbortController().signal;
const host = (directory: string, data = ''): HostConnection => ({
  hostId: 'h1',
  hostname: '127.0.0.1',
  login: server.user,
  password: server.password,
  directory,
  options: methodOptions('ftp', `127.0.0.1:${relay.port}`, data),
});
const openAtTheServer = () => heldByTheServer(server.port);

describe.skipIf(!availability.run)(`a failed FTP send at ProFTPD ${availability.reason}`, () => {
  // Each test starts with no session left by the one before.
  beforeEach(() => expect.poll(openAtTheServer, { timeout: scaled(5_000) }).toEqual([]));

  it('a refused upload ends only once the server has ended its session', async () => {
    const ftp = ftpMethod('ftp');
    const refused = ftp.send(
      host('in/missing', 'ftp.mkdirs = "no"'),
      { target: 'f', size: 3 },
      chunks(payload(3)),
      never(),
    );
    await expect(refused).rejects.toThrow(/^Upload to in\/missing\/f\.tmp failed: 550 /);
    expect(openAtTheServer()).toEqual([]);
    await ftp.close();
  });

  it('an upload aborted mid-stream ends only once the server has ended its session', async () => {
    const ftp = ftpMethod('ftp');
    const { source, release } = stallingSource(payload(500_000));
    const abort = new AbortController();
    const sending = ftp.send(host('in/aborted'), { target: 'f.bin', size: 1_000_000 }, source, abort.signal);
    // The server is writing the file.
    const written = path.join(server.root, 'in/aborted/f.bin.tmp');
    await expect
      .poll(() => fs.existsSync(written) && fs.statSync(written).size, { timeout: scaled(10_000) })
      .toBe(500_000);
    abort.abort(new Error('Transfer interrupted'));
    await expect(sending).rejects.toThrow('Transfer interrupted');
    expect(openAtTheServer()).toEqual([]);
    release();
    await ftp.close();
  });

  it('a delivered send leaves its session open for the next, and closing the method ends it', async () => {
    const ftp = ftpMethod('ftp');
    await ftp.send(host('in/kept'), { target: 'f', size: 3 }, chunks(payload(3)), never());
    expect(openAtTheServer()).toHaveLength(1);
    await ftp.close();
    expect(openAtTheServer()).toEqual([]);
  });
});

interface LateCloseRelay {
  port: number;
  stop(): Promise<void>;
}

/** A TCP relay to `port` that passes bytes both ways at once, and a client's close only after `delayMs`. */
async function lateCloseRelay(port: number, delayMs: number): Promise<LateCloseRelay> {
  const sockets = new Set<net.Socket>();
  const relay = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => client.write(chunk));
    client.on('close', () => setTimeout(() => upstream.destroy(), delayMs).unref());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return {
    port: (relay.address() as net.AddressInfo).port,
    stop: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        relay.close(() => resolve());
      }),
  };
}
