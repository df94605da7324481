import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { httpMethod } from '../../functions/transfer-methods/http.ts';
import { s3Method } from '../../functions/transfer-methods/s3.ts';
import { type S3TestServer, startS3 } from '../support/servers/s3.ts';
import { heldByTheClient } from '../support/servers/tcp-states.ts';
import { scaled } from '../support/time.ts';
import { chunks, hostFor, payload } from '../support/transfer.ts';

/**
 * Uploads by HTTP (the HTTP and S3 methods) to servers that stall: one that stops reading the
 * body, one that reads it and never answers, one whose answer stops half-way. Each send ends
 * after `ectrans.streamTimeout` on its own, without the mover's watch, and the connection of the
 * stalled request is closed by then (the kernel's state of the client's end of it).
 */
const MIB = 1024 * 1024;
const never = () => new AbortController().signal;
const stalled = /^Stalled: no byte moved for 1 s \(ectrans\.streamTimeout\)$/;

/** `bytes` zeros in chunks of 1 MiB, made as they are read; `read()` says how many were. */
function zeros(bytes: number) {
  let read = 0;
  async function* chunks() {
    const chunk = new Uint8Array(MIB);
    for (let left = bytes; left > 0; left -= MIB) {
      read += Math.min(left, MIB);
      yield left >= MIB ? chunk : chunk.subarray(0, left);
    }
  }
  return { chunks: chunks(), read: () => read };
}

type Stall = 'stops reading' | 'never answers' | 'answer stops' | 'answer trickles';

/**
 * A web server that stalls as told, of one test's own: an upload fetch gave up on may leave the
 * connections to its server in a state of fetch's own (Node's fetch connects again for a request it
 * aborted), which must not reach the next test. `requests` holds each request's client port.
 */
async function stallingServer(stall: Stall) {
  const requests: number[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    requests.push(req.socket.remotePort!);
    if (stall === 'stops reading') {
      let read = 0;
      req.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > 256 * 1024) req.pause();
      });
      return;
    }
    req.resume();
    req.on('end', () => {
      if (stall === 'never answers') return;
      res.writeHead(500, { 'content-length': '200' });
      if (stall === 'answer stops') return void res.write('the start of a reason');
      let sent = 0;
      const timer = setInterval(() => {
        res.write('x'.repeat(20));
        if ((sent += 20) === 200) {
          clearInterval(timer);
          res.end();
        }
      }, 300);
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('http: a server that stalls', () => {
  let server: Awaited<ReturnType<typeof stallingServer>> | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  const send = async (stall: Stall, target: string, source: AsyncIterable<Uint8Array>, size: number) => {
    server = await stallingServer(stall);
    const host = hostFor(
      'http',
      { hostname: `127.0.0.1:${server.port}`, directory: 'in' },
      { 'ectrans.streamTimeout': '1s' },
    );
    return httpMethod().send(host, { target, size }, source, never());
  };
  /** The connection of the server's one request, unless its client end has closed. */
  const stillOpen = () => {
    expect(server!.requests).toHaveLength(1);
    return heldByTheClient(server!.port, server!.requests[0]);
  };

  it(
    'ends a send whose server stops reading the body, its connection closed and its source let go',
    async () => {
      const source = zeros(512 * MIB);
      await expect(send('stops reading', 'unread', source.chunks, 512 * MIB)).rejects.toThrow(stalled);
      expect(stillOpen()).toEqual([]);
      const read = source.read();
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(source.read()).toBe(read);
      expect(read).toBeLessThan(64 * MIB);
    },
    scaled(15_000),
  );

  it(
    'ends a send whose server read the body and never answers, its connection closed',
    async () => {
      await expect(send('never answers', 'unanswered', chunks(payload(100_000)), 100_000)).rejects.toThrow(stalled);
      expect(stillOpen()).toEqual([]);
    },
    scaled(15_000),
  );

  it(
    'ends a send whose answer stops half-way, its connection closed',
    async () => {
      await expect(send('answer stops', 'half-answered', chunks(payload(1000)), 1000)).rejects.toThrow(/failed: 500 /);
      expect(stillOpen()).toEqual([]);
    },
    scaled(15_000),
  );

  it(
    'reads an answer that keeps coming, however long it takes in all',
    async () => {
      const started = Date.now();
      await expect(send('answer trickles', 'slow-answer', chunks(payload(1000)), 1000)).rejects.toThrow(
        /failed: 500 Internal Server Error x{200}$/,
      );
      expect(Date.now() - started).toBeGreaterThan(2_000);
    },
    scaled(15_000),
  );
});

describe('s3: a server that stalls', () => {
  // One server per test, for the same reason as above.
  let s3: S3TestServer;
  let requests: number[] = [];
  beforeEach(async () => {
    s3 = await startS3();
    requests = [];
  });
  afterEach(() => s3?.stop());

  const host = (options: Record<string, string | number> = {}) =>
    hostFor(
      's3',
      { login: s3.accessKeyId, password: s3.secretAccessKey, directory: 'incoming' },
      {
        's3.url': s3.url,
        's3.bucketName': s3.bucket,
        's3.enablePathStyleAccess': 'yes',
        'ectrans.streamTimeout': '1s',
        ...options,
      },
    );
  const send = (h: ReturnType<typeof host>, target: string, bytes: Uint8Array) =>
    s3Method().send(h, { target, size: bytes.byteLength }, chunks(bytes), never());

  it(
    'ends a PUT the server neither reads nor answers, its connection closed, no object left',
    async () => {
      s3.fault = (req) => {
        requests.push(req.socket.remotePort!);
        return 'stall';
      };
      await expect(send(host(), 'stalled', payload(1000))).rejects.toThrow(stalled);
      expect(heldByTheClient(s3.port, requests[0])).toEqual([]);
      s3.fault = () => undefined;
      expect(await s3.object('incoming/stalled')).toBeNull();
    },
    scaled(15_000),
  );

  it(
    'ends a multipart upload whose part stalls, its connection closed, and aborts the upload',
    async () => {
      s3.fault = (req) => {
        if (!req.url?.includes('partNumber=2')) return undefined;
        requests.push(req.socket.remotePort!);
        return 'stall';
      };
      const aborted = s3.aborted.length;
      const h = host({ 's3.multipartSize': 5 * MIB, 's3.partSize': 5 * MIB, 's3.numUploadThreads': 1 });
      await expect(send(h, 'stalled-mp', payload(12 * MIB))).rejects.toThrow(stalled);
      expect(heldByTheClient(s3.port, requests[0])).toEqual([]);
      expect(s3.aborted.length).toBe(aborted + 1);
      expect(s3.pendingUploads()).toEqual([]);
      s3.fault = () => undefined;
      expect(await s3.object('incoming/stalled-mp')).toBeNull();
    },
    scaled(15_000),
  );
});
