import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { onPostgres } from '../support/database.ts';
import { basic, freePort, killAll, removeTempDirs, startServer, tempDir } from '../support/processes.ts';

/**
 * Connections to the HTTPS port without their first request yet are bounded, in all and per address,
 * as the SFTP server bounds those not logged in: one more is closed at once without a byte, while a
 * keep-alive connection that sent its request before goes on; once the idle ones are dropped (their
 * deadline passed), new connections get in.
 */
vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });

const DEADLINE_MS = 3000;

describe.skipIf(onPostgres())('connections to the HTTPS port not in yet', () => {
  let port: number;
  let secret: string;

  beforeAll(async () => {
    port = await freePort();
    const server = startServer({
      PORT: String(port),
      ECPDS_DATA_DIR: path.join(tempDir(), 'data'),
      ECPDS_MOVER: '0',
      ECPDS_PORTAL_SFTP_PORT: '0',
      ECPDS_HANDSHAKE_TIMEOUT_MS: String(DEADLINE_MS),
      ECPDS_HEADERS_TIMEOUT_MS: String(DEADLINE_MS),
      ECPDS_MAX_STARTUPS: '3',
      ECPDS_MAX_STARTUPS_PER_ADDRESS: '2',
    });
    await server.ready;
    secret = /Its secret is shown this once:\s+(\S+)/.exec(server.output())![1]!;
  });
  afterAll(async () => {
    await killAll();
    removeTempDirs();
  });

  /**
   * A TCP connection from `from` (a loopback address) that sends `bytes` (nothing, or the start of a
   * TLS hello) and no more; `closed` resolves with what it received once it is closed.
   */
  async function idle(from: string, bytes = Buffer.alloc(0)) {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress: from });
    socket.on('error', () => undefined);
    let received = 0;
    let isClosed = false;
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    const closed = new Promise<number>((resolve) =>
      socket.once('close', () => {
        isClosed = true;
        resolve(received);
      }),
    );
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    if (bytes.length > 0) socket.write(bytes);
    return { socket, closed, isClosed: () => isClosed };
  }
  const halfHello = Buffer.from([0x16, 0x03, 0x01]);

  /** GET `p` on `agent`, from `from`; the status and whether the agent's connection was reused. */
  function get(agent: https.Agent | false, p: string, from?: string) {
    return new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
      const req = https.get(
        {
          host: '127.0.0.1',
          port,
          path: p,
          agent,
          localAddress: from,
          rejectUnauthorized: false,
          headers: { authorization: basic('admin', secret) },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
        },
      );
      req.on('error', reject);
    });
  }

  it('closes one more at once, per address and in all, keeps a keep-alive client going, and takes new ones once room is back', async () => {
    const keepAlive = new https.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect(await get(keepAlive, '/v1/incoming/user/list')).toEqual({ status: 200, reused: false });

      const silent = await idle('127.0.0.2');
      const handshaking = await idle('127.0.0.2', halfHello);
      const thirdFromThere = await idle('127.0.0.2', halfHello);
      // Closed without a byte, while the two before it wait for their deadline.
      expect(await thirdFromThere.closed).toBe(0);
      expect([silent.isClosed(), handshaking.isClosed()]).toEqual([false, false]);

      const elsewhere = await idle('127.0.0.3');
      const overTotal = await idle('127.0.0.4', halfHello);
      expect(await overTotal.closed).toBe(0);
      expect([silent.isClosed(), handshaking.isClosed(), elsewhere.isClosed()]).toEqual([false, false, false]);

      // The connection that sent its request before is not one of them.
      expect(await get(keepAlive, '/v1/incoming/user/list')).toEqual({ status: 200, reused: true });

      // Their deadline passes: the server drops them, and their places are free again.
      await Promise.all([silent.closed, handshaking.closed, elsewhere.closed]);
      expect(await get(false, '/v1/version', '127.0.0.2')).toEqual({ status: 200, reused: false });
      expect(await get(false, '/v1/version', '127.0.0.4')).toEqual({ status: 200, reused: false });
    } finally {
      keepAlive.destroy();
    }
  });
});
