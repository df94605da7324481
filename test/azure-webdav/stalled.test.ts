import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { HostConnection, TransferMethod } from '../../core/dissemination/methods.ts';
import { azureMethod } from '../../functions/transfer-methods/azure.ts';
import { webdavMethod } from '../../functions/transfer-methods/webdav.ts';
import { ACCOUNT, ACCOUNT_KEY } from '../support/servers/azurite.ts';
import { heldByTheClient } from '../support/servers/tcp-states.ts';
import { chunks, hostFor, payload } from '../support/transfer.ts';

/**
 * The azure and webdav methods against a server that stops reading an upload's body, or reads it
 * and never answers: the send ends after `ectrans.streamTimeout` on its own, and the stalled
 * request's connection is closed by then.
 */
const stalled = /^Stalled: no byte moved for 1 s \(ectrans\.streamTimeout\)$/;
const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function stallingServer(stall: 'stops reading' | 'never answers') {
  const uploads: { method: string; clientPort: number }[] = [];
  const server = http.createServer((req, res) => {
    // Collections are made at once; only uploads stall.
    if (req.method === 'MKCOL') return void res.writeHead(201).end();
    uploads.push({ method: req.method!, clientPort: req.socket.remotePort! });
    if (stall === 'never answers') return void req.resume();
    let read = 0;
    req.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read > 256 * 1024) req.pause();
    });
  });
  server.keepAliveTimeout = 60_000;
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, uploads };
}

const cases: [string, (port: number) => HostConnection, TransferMethod][] = [
  [
    'webdav',
    (port) =>
      hostFor(
        'webdav',
        { hostname: `127.0.0.1:${port}`, directory: 'in' },
        {
          'webdav.scheme': 'http',
          'ectrans.streamTimeout': '1s',
        },
      ),
    webdavMethod(),
  ],
  [
    'azure',
    (port) =>
      hostFor(
        'azure',
        { login: ACCOUNT, password: ACCOUNT_KEY, directory: 'box' },
        {
          'azure.url': `http://127.0.0.1:${port}/${ACCOUNT}`,
          'ectrans.streamTimeout': '1s',
        },
      ),
    azureMethod(),
  ],
];

describe.each(cases)('%s: a stalled upload', (_name, hostAt, method) => {
  for (const stall of ['stops reading', 'never answers'] as const) {
    it(`the server ${stall}: the send ends after ectrans.streamTimeout, its connection closed`, async () => {
      const server = await stallingServer(stall);
      const size = stall === 'stops reading' ? 16 * 1024 * 1024 : 100_000;
      const started = Date.now();
      const sending = method.send(
        hostAt(server.port),
        { target: 'f', size },
        chunks(payload(size)),
        new AbortController().signal,
      );
      await expect(sending).rejects.toThrow(stalled);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(server.uploads).toEqual([{ method: 'PUT', clientPort: expect.any(Number) }]);
      expect(heldByTheClient(server.port, server.uploads[0]!.clientPort)).toEqual([]);
    });
  }
});
