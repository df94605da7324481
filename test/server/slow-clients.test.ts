import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { onPostgres } from '../support/database.ts';
import { freePort, killAll, removeTempDirs, request, startServer, tempDir } from '../support/processes.ts';

/**
 * A client that holds a connection without ever finishing its request (slowloris: a byte of its
 * headers now and then, or a handshake begun and left) is closed once the server's deadlines pass,
 * whichever way it came in on the HTTPS port: TLS, or plain HTTP, which the port also answers.
 */
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

const DEADLINE_MS = 2000;
/** How long the slow clients keep going: far longer than the deadlines, well within Node's own defaults. */
const KEEP_GOING_MS = 40_000;

describe.skipIf(onPostgres())('slow clients on the HTTPS port', () => {
  let port: number;
  let url: string;

  beforeAll(async () => {
    port = await freePort();
    const server = startServer({
      PORT: String(port),
      ECPDS_DATA_DIR: path.join(tempDir(), 'data'),
      ECPDS_HANDSHAKE_TIMEOUT_MS: String(DEADLINE_MS),
      ECPDS_HEADERS_TIMEOUT_MS: String(DEADLINE_MS),
    });
    url = await server.ready;
  });
  afterAll(async () => {
    await killAll();
    removeTempDirs();
  });

  /**
   * Sends `bytes` one a second on `socket` once `ready`, for at most KEEP_GOING_MS; answers whether the
   * server closed the connection meanwhile, and after how long.
   */
  function dripping(socket: net.Socket, ready: string, bytes: string) {
    socket.on('error', () => undefined);
    return new Promise<{ closedByServer: boolean; afterMs: number }>((resolve) => {
      const start = Date.now();
      let sent = 0;
      let drip: NodeJS.Timeout | undefined;
      const giveUp = setTimeout(() => {
        clearInterval(drip);
        socket.destroy();
        resolve({ closedByServer: false, afterMs: Date.now() - start });
      }, KEEP_GOING_MS);
      socket.once('close', () => {
        clearTimeout(giveUp);
        clearInterval(drip);
        resolve({ closedByServer: true, afterMs: Date.now() - start });
      });
      socket.once(ready, () => {
        drip = setInterval(() => {
          if (!socket.destroyed) socket.write(bytes[sent++ % bytes.length]!);
        }, 1000);
      });
    });
  }

  const header = `GET /v1/version HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${'a'.repeat(100)}`;

  it('closes a client dripping its headers over TLS, and one dripping them in plain HTTP', async () => {
    const overTls = dripping(
      tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }),
      'secureConnect',
      header,
    );
    const plain = dripping(net.connect(port, '127.0.0.1'), 'connect', header);
    const [a, b] = await Promise.all([overTls, plain]);
    expect(a.closedByServer).toBe(true);
    expect(b.closedByServer).toBe(true);
    // Not before its deadline: the headers had that long.
    expect(Math.min(a.afterMs, b.afterMs)).toBeGreaterThanOrEqual(DEADLINE_MS - 200);
  });

  it('closes a connection that sends nothing, and one that leaves its TLS handshake half done', async () => {
    const silent = dripping(net.connect(port, '127.0.0.1'), 'never', '');
    const halfHandshake = net.connect(port, '127.0.0.1', () => halfHandshake.write(Buffer.from([0x16, 0x03, 0x01])));
    const [a, b] = await Promise.all([silent, dripping(halfHandshake, 'never', '')]);
    expect([a.closedByServer, b.closedByServer]).toEqual([true, true]);
  });

  it('still serves a client that sends its request at once', async () => {
    expect((await request(url, 'GET', '/v1/version')).status).toBe(200);
  });
});
