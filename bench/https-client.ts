import { spawn } from 'node:child_process';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';

/** The bench's HTTPS clients: curl for one big download, Node's https for many at once and listings. */

export const CIPHER = 'TLS_AES_256_GCM_SHA384';
const CURL_TLS = ['--http1.1', '--tlsv1.3', '--tls13-ciphers', CIPHER, '-k'];

function curl(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('curl', [...CURL_TLS, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve({ stdout, stderr }) : reject(new Error(`curl ${code}: ${stderr}`)),
    );
  });
}

const authArgs = (authorization?: string) => (authorization ? ['-H', `authorization: ${authorization}`] : []);

/** One download to /dev/null with curl: bytes per second, as curl measures them. */
export async function curlSpeed(url: string, bytes: number, authorization?: string) {
  const { stdout } = await curl([
    '-sS',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code} %{size_download} %{speed_download}',
    ...authArgs(authorization),
    url,
  ]);
  const [code, size, speed] = stdout.trim().split(' ');
  if (code !== '200' || Number(size) !== bytes) throw new Error(`${url}: ${code}, ${size} of ${bytes} bytes`);
  return Number(speed);
}

/** The TLS version and cipher curl reports for a HEAD of `url`. */
export async function curlCipher(url: string, authorization?: string) {
  const { stderr } = await curl(['-sSv', '-I', '-o', '/dev/null', ...authArgs(authorization), url]);
  return /SSL connection using (\S+ \/ \S+)/.exec(stderr)?.[1] ?? 'unknown';
}

/**
 * An agent of Node's https client with the bench's cipher. Kept alive: its sockets are reused;
 * otherwise each request opens a connection of its own with a full handshake (no session resumed).
 */
export const agentOf = (keepAlive: boolean) =>
  new https.Agent({
    keepAlive,
    maxSockets: Number.POSITIVE_INFINITY,
    maxFreeSockets: 1024,
    maxCachedSessions: 0,
    ciphers: CIPHER,
    minVersion: 'TLSv1.3',
    rejectUnauthorized: false,
  });

export interface Fetched {
  status: number;
  /** Request sent → first byte of the body (ms); → headers when there is none. */
  firstByte: number;
  /** Request sent → last byte (ms). */
  total: number;
  bytes: number;
  /** The body, when asked for. */
  body: Buffer | null;
  reusedSocket: boolean;
  cipher: string;
}

/** A request whose body is read to its end; times are taken from the moment it is sent. */
export function timedRequest(
  agent: https.Agent,
  url: string,
  options: { method?: string; headers?: Record<string, string>; keepBody?: boolean } = {},
): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = https.request(url, { agent, method: options.method ?? 'GET', headers: options.headers });
    req.on('error', reject);
    req.on('response', (res) => {
      const headersAt = performance.now() - started;
      const cipher = (res.socket as TLSSocket).getCipher?.()?.standardName ?? 'unknown';
      let firstByte: number | null = null;
      let bytes = 0;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => {
        firstByte ??= performance.now() - started;
        bytes += chunk.byteLength;
        if (options.keepBody) chunks.push(chunk);
      });
      res.on('error', reject);
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          firstByte: firstByte ?? headersAt,
          total: performance.now() - started,
          bytes,
          body: options.keepBody ? Buffer.concat(chunks) : null,
          reusedSocket: req.reusedSocket,
          cipher,
        }),
      );
    });
    req.end();
  });
}
