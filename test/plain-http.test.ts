import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { VERSION } from '../core/system/version.ts';
import { onPostgres } from './support/database.ts';
import {
  freePort,
  killAll,
  removeTempDirs,
  request,
  type ServerProcess,
  startServer,
  tempDir,
} from './support/processes.ts';

// Plain HTTP sent to the HTTPS port of `ecpds-edge serve`: the 403 the API gives over plain HTTP, not a failed
// TLS handshake that closes the connection without a word.

const NOT_SECURE = 'Operation only available through a secure connection (https)';

vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

/** Everything the server sends on one TCP connection after `bytes`, up to its closing the connection. */
function exchange(port: number, bytes: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let text = '';
    socket.setEncoding('latin1').on('data', (c: string) => void (text += c));
    socket.setTimeout(20_000, () => socket.destroy(new Error(`no close after ${JSON.stringify(text)}`)));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
  });
}

/** A TCP connection to `port` once connected, and a promise of its closing. */
async function connection(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, closed };
}

const get = (
  lib: typeof http | typeof https,
  url: string,
  options: https.RequestOptions,
): Promise<{ status: number; text: string; reused: boolean }> =>
  new Promise((resolve, reject) => {
    const req = lib.get(url, { rejectUnauthorized: false, ...options }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => void (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, reused: req.reusedSocket }));
    });
    req.on('error', reject);
  });

describe.skipIf(onPostgres())('plain HTTP on the HTTPS port', () => {
  let server: ServerProcess;
  let url: string;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    server = startServer({ PORT: String(port), ECPDS_DATA_DIR: path.join(tempDir(), 'data') });
    url = await server.ready;
  });
  afterAll(async () => {
    await killAll();
    removeTempDirs();
  });

  it('answers 403 with the plain-text body of the API, and closes the connection', async () => {
    const raw = await exchange(port, 'GET /v1/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const [head, body] = raw.split('\r\n\r\n');
    const [statusLine, ...headerLines] = head!.split('\r\n');
    expect(statusLine).toBe('HTTP/1.1 403 Forbidden');
    const headers = Object.fromEntries(
      headerLines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    );
    expect(headers).toMatchObject({
      'content-type': 'text/plain; charset=UTF-8',
      'content-length': String(NOT_SECURE.length),
      connection: 'close',
    });
    expect(body).toBe(NOT_SECURE);

    const viaClient = await request(url.replace(/^https:/, 'http:'), 'GET', '/v1/version');
    expect(viaClient).toMatchObject({ status: 403, text: NOT_SECURE });
  });

  it('answers the same to a request with a body and to a client that keeps its connections', async () => {
    const posted = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(`http://127.0.0.1:${port}/v1/datafile/put`, { method: 'POST' }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => void (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end(Buffer.alloc(1 << 20, 'x'));
    });
    expect(posted).toEqual({ status: 403, text: NOT_SECURE });

    const agent = new http.Agent({ keepAlive: true });
    try {
      for (let i = 0; i < 2; i++) {
        expect(await get(http, `http://127.0.0.1:${port}/v1/version`, { agent })).toEqual({
          status: 403,
          text: NOT_SECURE,
          reused: false,
        });
      }
    } finally {
      agent.destroy();
    }
  });

  it('still serves HTTPS on the same port, kept-alive connections included', async () => {
    const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false });
    try {
      const first = await get(https, `${url}/v1/version`, { agent });
      const second = await get(https, `${url}/v1/version`, { agent });
      expect(JSON.parse(first.text)).toEqual({ status: 'ok', version: VERSION });
      expect(second).toEqual({ ...first, reused: true });
      expect(first.status).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  it('survives connections that send nothing, are reset, are neither TLS nor HTTP, or stop mid-handshake', async () => {
    const silent = await connection(port);
    silent.socket.end();
    await silent.closed;
    const reset = await connection(port);
    reset.socket.resetAndDestroy();
    await reset.closed;
    expect(await exchange(port, Buffer.from([0, 1, 2, 3, 13, 10, 13, 10]))).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    const halfHandshake = await connection(port);
    halfHandshake.socket.write(Buffer.from([0x16, 0x03, 0x01]));
    halfHandshake.socket.resetAndDestroy();
    await halfHandshake.closed;

    expect((await request(url, 'GET', '/v1/version')).status).toBe(200);
    expect(server.hasExited()).toBe(false);
  });

  it('stops on SIGTERM without waiting for a connection that has sent nothing or half a request', async () => {
    const silent = await connection(port);
    const halfRequest = await connection(port);
    halfRequest.socket.write('GET /v1/version HTTP/1.1\r\n');
    // The server has seen the first bytes before it is told to stop.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await server.stop(10_000)).toBe(true);
    expect(await server.exited).toBe(0);
    await Promise.all([silent.closed, halfRequest.closed]);
  });
});
