import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpSink, startHttpSink } from './support/servers/http-sink.ts';
import { type S3TestServer, startS3 } from './support/servers/s3.ts';

/**
 * The s3 and http methods inside workerd (Miniflare, with the compatibility flags of
 * wrangler.toml), sending to the same local servers as the Node tests: fetch, Web streams,
 * aws4fetch and node:crypto under nodejs_compat, and Content-Length from a FixedLengthStream.
 */
const MIB = 1024 * 1024;
let s3: S3TestServer;
let sink: HttpSink;
let mf: Miniflare;
let dir: string;

beforeAll(async () => {
  [s3, sink] = await Promise.all([startS3(), startHttpSink()]);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-workerd-'));
  await build({
    entryPoints: [new URL('./support/workerd/transfer-entry.ts', import.meta.url).pathname],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    external: ['node:*'],
    outfile: path.join(dir, 'worker.mjs'),
    logLevel: 'silent',
  });
  mf = new Miniflare({
    modules: true,
    modulesRoot: dir,
    scriptPath: path.join(dir, 'worker.mjs'),
    compatibilityDate: '2026-04-01',
    compatibilityFlags: ['nodejs_compat'],
  });
});
afterAll(async () => {
  await mf?.dispose();
  await s3?.stop();
  await sink?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const filled = (size: number) => createHash('md5').update(new Uint8Array(size).fill(7)).digest('hex');
async function send(body: Record<string, unknown>) {
  const res = await mf.dispatchFetch('http://worker/', {
    method: 'POST',
    body: JSON.stringify({ login: 'S3RVER', password: 'S3RVER', host: '', directory: 'wk', ...body }),
  });
  return (await res.json()) as { sent?: number; md5?: string; error?: string };
}
const s3Data = (extra = '') =>
  `s3.url = "${s3.url}"\ns3.bucketName = "${s3.bucket}"\ns3.enablePathStyleAccess = "yes"\n${extra}`;

describe('transfer methods inside workerd', () => {
  it('s3: one PUT, signed as S3 checks it', async () => {
    await expect(send({ method: 's3', data: s3Data(), target: 'put.bin', size: 300_000 })).resolves.toEqual({
      sent: 300_000,
      md5: filled(300_000),
    });
    expect((await s3.object('wk/put.bin'))?.length).toBe(300_000);
  });

  it('s3: multipart', async () => {
    const data = s3Data(`s3.multipartSize = "${5 * MIB}"\ns3.partSize = "${5 * MIB}"`);
    const size = 12 * MIB;
    await expect(send({ method: 's3', data, target: 'mp.bin', size })).resolves.toEqual({
      sent: size,
      md5: filled(size),
    });
    expect((await s3.object('wk/mp.bin'))?.length).toBe(size);
  });

  it('s3: a wrong secret says so', async () => {
    const r = await send({ method: 's3', data: s3Data(), target: 'x', size: 10, password: 'wrong' });
    expect(r.error).toMatch(/S3 PUT test-bucket\/wk\/x failed: 403 SignatureDoesNotMatch/);
  });

  it('http: one PUT with a Content-Length, not chunked', async () => {
    const r = await send({ method: 'http', host: `127.0.0.1:${sink.port}`, data: '', target: 'h.bin', size: 300_000 });
    expect(r).toEqual({ sent: 300_000, md5: filled(300_000) });
    expect(sink.requests.at(-1)!.headers).toMatchObject({ 'content-length': '300000' });
    expect(sink.requests.at(-1)!.headers['transfer-encoding']).toBeUndefined();
  });
});
