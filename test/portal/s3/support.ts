import { createHash, createHmac } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { AwsV4Signer } from 'aws4fetch';
import type { Harness } from '../../support/harness.ts';
import { portalScene, serveHttps, tool } from '../support.ts';

/** S3 requests as an SDK signs them (aws4fetch), sent to the app in this process. */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface S3Call {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Presigned: the signature in the query, valid this many seconds. */
  presign?: number;
  /** The signing time (X-Amz-Date), for requests signed in the past. */
  datetime?: Date;
  /** Signs the payload's SHA-256 rather than UNSIGNED-PAYLOAD. */
  payloadHash?: string;
}

export const BASE = 'https://localhost/portal/s3';

/** Signs a request of `url` with `credentials`, as an SDK would. */
export async function signed(url: string, credentials: S3Credentials, call: S3Call = {}) {
  const target = new URL(url);
  if (call.presign !== undefined) target.searchParams.set('X-Amz-Expires', String(call.presign));
  const headers = { ...call.headers };
  if (call.payloadHash !== undefined) headers['x-amz-content-sha256'] = call.payloadHash;
  const signer = new AwsV4Signer({
    ...credentials,
    url: target.toString(),
    method: call.method ?? 'GET',
    headers,
    body: call.body as never,
    service: 's3',
    region: 'us-east-1',
    signQuery: call.presign !== undefined,
    datetime: call.datetime?.toISOString().replace(/[:-]|\.\d{3}/g, ''),
  });
  return signer.sign();
}

/** A signed (or, without credentials, anonymous) request to the harness's app. */
export async function s3(h: Harness, url: string, credentials: S3Credentials | null, call: S3Call = {}) {
  if (credentials === null) {
    return h.app.request(url, { method: call.method ?? 'GET', headers: call.headers, body: call.body as never });
  }
  const request = await signed(url, credentials, call);
  return h.app.request(request.url.toString(), {
    method: request.method,
    headers: request.headers,
    body: call.body as never,
  });
}

/** An AWS SDK client of the portal's S3 endpoint at `endpoint`, path style, the test server's certificate not checked. */
export const sdkClient = (endpoint: string, user: string, password: string) =>
  new S3Client({
    endpoint,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: user, secretAccessKey: password },
    requestHandler: { httpsAgent: new https.Agent({ rejectUnauthorized: false }) },
  });

/** The text of one element of an XML answer (the first). */
export const xmlText = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1] ?? null;
export const xmlAll = (xml: string, name: string) =>
  [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, 'g'))].map((m) => m[1]!);

/**
 * An aws-chunked upload (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) as SDKs sign it: the request signed
 * with the body's length, then each chunk (and the empty last one) signed in a chain from the
 * request's signature. `forge` names a chunk whose bytes are changed after it is signed.
 */
export async function signedChunkedUpload(
  target: string,
  credentials: S3Credentials,
  chunks: readonly Uint8Array[],
  forge: number | null = null,
) {
  const all = [...chunks, new Uint8Array(0)];
  const frame = (size: number) => `${size.toString(16)};chunk-signature=${'0'.repeat(64)}\r\n`.length + size + 2;
  const length = all.reduce((n, c) => n + frame(c.length), 0);
  const decoded = chunks.reduce((n, c) => n + c.length, 0);
  const request = await signed(target, credentials, {
    method: 'PUT',
    payloadHash: 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
    headers: {
      'content-encoding': 'aws-chunked',
      'content-length': String(length),
      'x-amz-decoded-content-length': String(decoded),
    },
  });
  const amzDate = request.headers.get('x-amz-date')!;
  const scope = `${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request`;
  const hmac = (k: Buffer | string, text: string) => createHmac('sha256', k).update(text).digest();
  const key = ['us-east-1', 's3', 'aws4_request'].reduce(
    (k, part) => hmac(k, part),
    hmac(`AWS4${credentials.secretAccessKey}`, amzDate.slice(0, 8)),
  );
  const hash = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');
  let previous = /Signature=([0-9a-f]{64})/.exec(request.headers.get('authorization')!)![1]!;
  const body = all.flatMap((chunk, i) => {
    previous = hmac(
      key,
      ['AWS4-HMAC-SHA256-PAYLOAD', amzDate, scope, previous, hash(''), hash(chunk)].join('\n'),
    ).toString('hex');
    const sent = i === forge ? Buffer.from(chunk).fill(0, 0, 10) : chunk;
    return [Buffer.from(`${chunk.length.toString(16)};chunk-signature=${previous}\r\n`), sent, Buffer.from('\r\n')];
  });
  return { url: new URL(request.url), headers: Object.fromEntries(request.headers), body, length };
}

/**
 * Sends a request over real HTTPS to the test server (its certificate its own), writing the body
 * in the pieces given, as a client streams it; answers the status and text.
 */
export function httpsSend(
  base: string,
  request: { url: URL; method?: string; headers: Record<string, string>; body: readonly Uint8Array[] },
) {
  const server = new URL(base);
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = https.request(
      {
        host: server.hostname,
        port: server.port,
        method: request.method ?? 'PUT',
        path: request.url.pathname + request.url.search,
        headers: { ...request.headers, host: request.url.host },
        rejectUnauthorized: false,
        // A connection of its own: one the server closed after refusing a body is not used again.
        agent: false,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (b: Buffer) => parts.push(b));
        res.on('end', () => resolve({ status: res.statusCode!, text: Buffer.concat(parts).toString() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    void (async () => {
      for (const piece of request.body) {
        if (!req.write(piece)) await new Promise((r) => req.once('drain', r));
      }
      req.end();
    })();
  });
}

/**
 * The harness's S3 listener (what `ecpds-edge serve` serves on ECPDS_PORTAL_S3_PORT: the endpoint at
 * its root) on a real HTTPS port of this process; its `host` is what clients name as their endpoint.
 */
export async function serveS3Listener(h: Harness) {
  if (h.app.s3 === null) throw new Error('the harness serves no portal');
  const server = await serveHttps(h.app.s3);
  return { ...server, host: new URL(server.url).host };
}

/**
 * A portal scene (`portalScene`) with its S3 listener (`serveS3Listener`) beside it: what the tests of
 * S3 clients over real HTTPS start; `close` closes both.
 */
export async function s3Scene(options: Parameters<typeof portalScene>[0] = {}) {
  const scene = await portalScene(options);
  const listener = await serveS3Listener(scene.h).catch(async (e) => {
    await scene.close();
    throw e;
  });
  return {
    ...scene,
    listener,
    async close() {
      await listener.close();
      await scene.close();
    },
  };
}
export type S3Scene = Awaited<ReturnType<typeof s3Scene>>;

/**
 * s3cmd as a consumer configures it for an S3-compatible service: a config file of its own (`-c`,
 * the listener as host_base and host_bucket: path style), HOME in the test's directory so that
 * nothing of the machine's is read, the test server's own certificate not checked.
 */
export function s3cmdFor(dir: string, host: string, credentials: S3Credentials) {
  const home = fs.mkdtempSync(path.join(dir, 's3cmd-home-'));
  const config = path.join(home, 's3cfg');
  fs.writeFileSync(
    config,
    [
      '[default]',
      `access_key = ${credentials.accessKeyId}`,
      `secret_key = ${credentials.secretAccessKey}`,
      `host_base = ${host}`,
      `host_bucket = ${host}`,
      'use_https = True',
      'check_ssl_certificate = False',
      '',
    ].join('\n'),
  );
  return (...args: string[]) =>
    tool('s3cmd', ['-c', config, '--no-check-certificate', ...args], { cwd: dir, env: { HOME: home } });
}
