import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { HostConnection } from '../core/dissemination/methods.ts';
import { httpMethod, httpUrl } from '../functions/transfer-methods/http.ts';
import { type HttpSink, startHttpSink } from './support/servers/http-sink.ts';
import { abortMidway, chunks, hostFor, md5, payload } from './support/transfer.ts';

let sink: HttpSink;
let secured: HttpSink;
beforeAll(async () => {
  sink = await startHttpSink();
  secured = await startHttpSink({ auth: { user: 'ecpds', password: 'pä:ss' } });
});
afterAll(async () => {
  await sink?.stop();
  await secured?.stop();
});
beforeEach(() => {
  sink.respond = () => undefined;
});

const never = () => new AbortController().signal;
const host = (
  port: number,
  options: Record<string, string | number> = {},
  over: Partial<Parameters<typeof hostFor>[1]> = {},
) => hostFor('http', { hostname: `127.0.0.1:${port}`, directory: 'in/coming', ...over }, options);
const send = (h: HostConnection, target: string, bytes: Uint8Array, signal = never(), size = bytes.byteLength) =>
  httpMethod().send(h, { target, size }, chunks(bytes), signal);

describe('http: the URL', () => {
  it('scheme, host, port and path, each segment encoded', () => {
    const h = hostFor('http', { hostname: 'dissem.example.org', directory: '/data/in' }, { 'http.scheme': 'https' });
    expect(httpUrl(h, { target: 'a b/c#1.grib', size: 1 }).href).toBe(
      'https://dissem.example.org/data/in/a%20b/c%231.grib',
    );
    const p = hostFor('http', { hostname: 'h', directory: '' }, { 'http.port': 8080 });
    expect(httpUrl(p, { target: 'f', size: 1 }).href).toBe('http://h:8080/f');
  });

  it('refuses a scheme other than http and https', () => {
    const h = hostFor('http', { hostname: 'h' }, { 'http.scheme': 'ftp' });
    expect(() => httpUrl(h, { target: 'f', size: 1 })).toThrow(/http.scheme must be http or https/);
  });
});

describe('http: sending', () => {
  it('PUTs the bytes with their length and answers their size and MD5', async () => {
    const bytes = payload(500_000);
    await expect(send(host(sink.port), 'a.grib', bytes)).resolves.toEqual({ sent: 500_000, md5: md5(bytes) });
    expect(md5(sink.file('in/coming/a.grib')!)).toBe(md5(bytes));
    expect(sink.requests.at(-1)).toMatchObject({ method: 'PUT', url: '/in/coming/a.grib' });
    expect(sink.requests.at(-1)!.headers).toMatchObject({ 'content-length': '500000' });
    expect(sink.requests.at(-1)!.headers['transfer-encoding']).toBeUndefined();
  });

  it('POSTs with http.usePost, and adds http.authheader as is', async () => {
    const bytes = payload(1000);
    const h = host(sink.port, { 'http.usePost': 'yes', 'http.authheader': 'X-Api-Key: k=1; v' });
    await send(h, 'posted', bytes);
    expect(sink.requests.at(-1)).toMatchObject({ method: 'POST', headers: { 'x-api-key': 'k=1; v' } });
    expect(md5(sink.file('in/coming/posted')!)).toBe(md5(bytes));
  });

  it('is refused without credentials, and sends with Basic auth from the login', async () => {
    await expect(send(host(secured.port), 'f', payload(10))).rejects.toThrow(
      /HTTP PUT http:\/\/127.0.0.1:\d+\/in\/coming\/f failed: 401 Unauthorized Authorization required/,
    );
    const h = host(secured.port, {}, { login: 'ecpds', password: 'pä:ss' });
    await send(h, 'f', payload(10));
    expect(secured.file('in/coming/f')?.length).toBe(10);
  });

  it('a server error fails with the status and the start of the body', async () => {
    sink.respond = () => ({ status: 500, body: `boom ${'x'.repeat(500)}` });
    const error = await send(host(sink.port), 'e', payload(10)).catch((e: Error) => e.message);
    expect(error).toMatch(/failed: 500 Internal Server Error boom x+$/);
    expect(String(error).length).toBeLessThan(300);
  });

  it('a redirect is not followed (the body cannot be sent again): it fails and says where to', async () => {
    sink.respond = () => ({ status: 307, body: '', headers: { location: 'http://elsewhere.example.org/f' } });
    await expect(send(host(sink.port), 'moved', payload(10))).rejects.toThrow(
      /failed: 307 Temporary Redirect \(to http:\/\/elsewhere.example.org\/f\)$/,
    );
  });

  it('a source shorter or longer than registered fails and stores nothing', async () => {
    await expect(send(host(sink.port), 'short', payload(100), never(), 150)).rejects.toThrow(
      'Source changed size: 100 bytes read, 150 registered',
    );
    await expect(send(host(sink.port), 'long', payload(128 * 1024), never(), 64 * 1024)).rejects.toThrow(
      'Source changed size: more than 65536 bytes read, 65536 registered',
    );
    expect(sink.file('in/coming/short')).toBeNull();
    expect(sink.file('in/coming/long')).toBeNull();
  });

  it('an abort in the middle rejects at once and stores nothing', async () => {
    await abortMidway((source, signal) =>
      httpMethod().send(host(sink.port), { target: 'cut', size: 1_000_000 }, source, signal),
    );
    expect(sink.requests.at(-1)).toMatchObject({ url: '/in/coming/cut', incomplete: true });
    expect(sink.file('in/coming/cut')).toBeNull();
  });

  it('a server that never answers is left when the signal aborts', async () => {
    sink.respond = () => 'stall';
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('Transfer timed out')), 300);
    await expect(send(host(sink.port), 'stalled', payload(10), controller.signal)).rejects.toThrow(
      'Transfer timed out',
    );
  });

  it('ectrans.putTimeOut bounds the send', async () => {
    sink.respond = () => 'stall';
    await expect(send(host(sink.port, { 'ectrans.putTimeOut': '300ms' }), 'slow', payload(10))).rejects.toThrow(
      'Transfer timed out after 0.3 s (ectrans.putTimeOut)',
    );
  });
});

describe('http: https with a self-signed certificate', () => {
  let tls: HttpSink;
  let certFile: string;
  beforeAll(async () => {
    const { generate } = await import('selfsigned');
    const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
      keySize: 2048,
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
    } as never);
    certFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-cert-')), 'cert.pem');
    fs.writeFileSync(certFile, pems.cert);
    tls = await startHttpSink({ tls: { key: pems.private, cert: pems.cert } });
  });
  afterAll(() => tls?.stop());

  it('is refused, and the error says why', async () => {
    await expect(send(host(tls.port, { 'http.scheme': 'https' }), 'f', payload(10))).rejects.toThrow(
      /HTTP PUT https:\/\/127.0.0.1:\d+\/in\/coming\/f failed: self-signed certificate/,
    );
  });

  // The sink runs in this process: the child must not block it, hence execFile and not spawnSync.
  it('is trusted when the process is given the certificate (NODE_EXTRA_CA_CERTS)', async () => {
    const script = [
      `import { httpMethod } from ${JSON.stringify(path.resolve('functions/transfer-methods/http.ts'))};`,
      `import { hostFor } from ${JSON.stringify(path.resolve('test/support/transfer.ts'))};`,
      `const h = hostFor('http', { hostname: '127.0.0.1:${tls.port}' }, { 'http.scheme': 'https' });`,
      'const body = (async function* () { yield new Uint8Array(3); })();',
      `const r = await httpMethod().send(h, { target: 'trusted', size: 3 }, body, new AbortController().signal);`,
      'console.log(JSON.stringify(r));',
    ].join('\n');
    const run = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: certFile },
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toMatchObject({ sent: 3 });
    expect(tls.file('trusted')?.length).toBe(3);
  });
});
