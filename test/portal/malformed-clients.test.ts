import net from 'node:net';
import tls from 'node:tls';
import ssh2 from 'ssh2';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { onPostgres } from '../support/database.ts';
import {
  freePort,
  killAll,
  removeTempDirs,
  request,
  type ServerProcess,
  startServer,
  tempDir,
} from '../support/processes.ts';
import { GARBAGE } from '../support/servers/faulty-hosts.ts';

/**
 * The portal's servers in `ecpds-edge serve` (the compiled build), against clients that break
 * their protocol: garbage instead of an SSH banner, a reset in the middle of the SSH or TLS
 * handshake, a TLS client hello of junk, a malformed HTTP request line, an S3 request whose
 * signature headers are broken. After each the process is still up and answers a good client.
 */
vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });

let server: ServerProcess;
let url: string;
let sftpPort: number;

beforeAll(async () => {
  if (onPostgres()) return;
  sftpPort = await freePort();
  server = startServer({
    PORT: String(await freePort()),
    ECPDS_DATA_DIR: tempDir('ecpds-malformed-clients-'),
    ECPDS_PORTAL_SFTP_PORT: String(sftpPort),
  });
  url = await server.ready;
});
afterAll(async () => {
  await killAll();
  removeTempDirs();
});

const httpsPort = () => Number(new URL(url).port);

/** Connects, lets `misbehave` have the socket, and resolves once the server has closed it or 5 s passed. */
function rawClient(port: number, misbehave: (socket: net.Socket) => void) {
  return new Promise<void>((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => misbehave(socket));
    socket.on('error', () => resolve());
    socket.on('close', () => resolve());
    socket.resume();
    setTimeout(() => {
      socket.destroy();
      resolve();
    }, 5_000).unref();
  });
}

/** What a good SSH client hears: the server's banner, then its refusal of a login that does not exist. */
function sshLogin(): Promise<string> {
  return new Promise((resolve) => {
    const client = new ssh2.Client();
    client.on('error', (e) => resolve(e.message));
    client.on('ready', () => {
      client.end();
      resolve('ready');
    });
    client.connect({
      host: '127.0.0.1',
      port: sftpPort,
      username: 'nobody',
      password: 'wrong',
      readyTimeout: 20_000,
    });
  });
}

/** The start of a TLS 1.2 ClientHello record header, promising more than is ever sent. */
const PARTIAL_CLIENT_HELLO = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]);

async function stillServing() {
  expect(server.hasExited(), server.output()).toBe(false);
  expect((await request(url, 'GET', '/healthz')).status).toBe(200);
  expect(await sshLogin()).toBe('All configured authentication methods failed');
}

describe.skipIf(onPostgres())('the portal servers against malformed clients', () => {
  it('SFTP: garbage instead of a banner', async () => {
    await rawClient(sftpPort, (socket) => socket.write(GARBAGE));
    await stillServing();
  });

  it('SFTP: a reset in the middle of the key exchange', async () => {
    await rawClient(sftpPort, (socket) => {
      socket.write('SSH-2.0-OpenSSH_9.6\r\n');
      socket.once('data', () => {
        // The length of a KEXINIT packet, and the packet never sent.
        socket.write(Buffer.from([0x00, 0x00, 0x05, 0xdc, 0x0a, 0x14]));
        setTimeout(() => socket.resetAndDestroy(), 50);
      });
    });
    await stillServing();
  });

  it('HTTPS: a TLS client hello of junk', async () => {
    await rawClient(httpsPort(), (socket) =>
      socket.write(Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x00, 0x40]), Buffer.alloc(64, 0xee)])),
    );
    await stillServing();
  });

  it('HTTPS: a reset in the middle of the TLS handshake', async () => {
    await rawClient(httpsPort(), (socket) => {
      socket.write(PARTIAL_CLIENT_HELLO);
      setTimeout(() => socket.resetAndDestroy(), 50);
    });
    await stillServing();
  });

  it('HTTPS: a malformed HTTP request line', async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = tls.connect({ host: '127.0.0.1', port: httpsPort(), rejectUnauthorized: false }, () => {
        socket.write('GET\u0000 /healthz HTTP/9.9 garbage\r\n\r\n');
      });
      let text = '';
      socket.on('data', (chunk: Buffer) => void (text += chunk.toString('latin1')));
      socket.on('error', () => resolve(text));
      socket.on('close', () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    await stillServing();
  });

  it('S3: a request whose signature headers are broken', async () => {
    const broken: Array<Record<string, string>> = [
      {
        authorization: 'AWS4-HMAC-SHA256 Credential=///, SignedHeaders=, Signature=zz',
        'x-amz-date': 'yesterday',
      },
      { authorization: 'AWS4-HMAC-SHA256', 'x-amz-date': '20260101T000000Z' },
      {
        authorization: 'AWS4-HMAC-SHA256 Credential=a/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;;;',
      },
      {
        authorization: `AWS4-HMAC-SHA256 Credential=${'x'.repeat(4000)}`,
        'x-amz-content-sha256': '\u00ff',
      },
    ];
    for (const headers of broken) {
      const r = await request(url, 'GET', '/s3/bucket/key', headers);
      expect(r.status, r.text).toBeGreaterThanOrEqual(400);
      expect(r.status, r.text).toBeLessThan(500);
    }
    await stillServing();
  });
});
