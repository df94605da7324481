import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TransferMethod } from '../../core/dissemination/methods.ts';
import { httpMethod } from '../../functions/transfer-methods/http.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import { type S3TestServer, startS3 } from '../support/servers/s3.ts';
import { heldByTheClient } from '../support/servers/tcp-states.ts';
import { scaled } from '../support/time.ts';
import { chunks, hostFor, payload } from '../support/transfer.ts';

/**
 * HTTP and S3 uploads from a Node mover keep no connection open for reuse: a host's
 * maxConnections counts the sends in flight, so an idle connection a mover kept would let the
 * server see more connections than the host allows once another mover sends. Measured by the
 * kernel: once a send has ended, the client holds no connection to the server, and each send
 * opened its own.
 */
const never = () => new AbortController().signal;
const methods = nodeTransferMethods({ fileRoots: [] });

/** Until the kernel shows the client's end of every connection to `port` closed, or 2 s. */
async function clientHoldsAfterSend(port: number) {
  for (const until = Date.now() + 2000; Date.now() < until; ) {
    if (heldByTheClient(port).length === 0) return 0;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return heldByTheClient(port).length;
}

describe('HTTP uploads', () => {
  let server: http.Server;
  let port: number;
  const connections: number[] = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(201).end());
    });
    server.on('connection', (socket) => connections.push(socket.remotePort!));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const sendEach = async (method: TransferMethod, count: number) => {
    connections.length = 0;
    const host = hostFor('http', { hostname: '127.0.0.1' }, { 'http.port': port });
    const held: number[] = [];
    for (let i = 0; i < count; i++) {
      const bytes = payload(4096, i);
      await method.send(host, { target: `f${i}`, size: bytes.byteLength }, chunks(bytes), never());
      held.push(await clientHoldsAfterSend(port));
    }
    return { held, connections: [...connections] };
  };

  it("from a Node mover, closes each send's connection once it has ended", async () => {
    const { held, connections: opened } = await sendEach(methods.http!, 3);
    expect(held).toEqual([0, 0, 0]);
    expect(new Set(opened).size).toBe(3);
  });

  it('would otherwise keep an idle connection open after a send (the control)', async () => {
    const { held } = await sendEach(httpMethod(), 1);
    expect(held).toEqual([1]);
  });
});

describe('S3 uploads', () => {
  let s3: S3TestServer;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(() => s3?.stop());

  it(
    "from a Node mover, close each request's connection once it has ended, a multipart upload's too",
    async () => {
      const host = hostFor(
        's3',
        { login: s3.accessKeyId, password: s3.secretAccessKey, directory: 'incoming' },
        {
          's3.url': s3.url,
          's3.bucketName': s3.bucket,
          's3.enablePathStyleAccess': 'yes',
          's3.multipartSize': 6 * 1024 * 1024,
          's3.partSize': 5 * 1024 * 1024,
        },
      );
      for (const size of [4096, 11 * 1024 * 1024]) {
        const bytes = payload(size);
        const target = `object-${size}`;
        const sent = await methods.s3!.send(host, { target, size }, chunks(bytes), never());
        expect(sent.sent).toBe(size);
        expect(await clientHoldsAfterSend(s3.port)).toBe(0);
        expect((await s3.object(`incoming/${target}`))?.byteLength).toBe(size);
      }
    },
    scaled(30_000),
  );
});
