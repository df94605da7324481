import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { methodOptions } from '../../core/dissemination/method-options.ts';
import type { HostConnection } from '../../core/dissemination/methods.ts';
import { httpMethod } from '../../functions/transfer-methods/http.ts';

/** The HTTP method's read, against a real server: the host's Basic credentials, the size it tells. */
let server: http.Server;
let port: number;
const seen: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(`${req.url} ${req.headers.authorization ?? ''}`);
    if (req.url === '/products/run.grib') res.writeHead(200, { 'content-length': '5' }).end('bytes');
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const host = (): HostConnection => ({
  hostId: '7',
  hostname: '127.0.0.1',
  login: 'reader',
  password: 'secret',
  directory: '',
  options: methodOptions('http', `127.0.0.1:${port}`, ''),
});

it('reads a path with the host credentials, and fails with the status when it is not there', async () => {
  const method = httpMethod();
  const got = await method.fetch!(host(), '/products/run.grib', AbortSignal.timeout(5000));
  expect(got.size).toBe(5);
  const chunks: Uint8Array[] = [];
  for await (const chunk of got.stream) chunks.push(chunk);
  expect(Buffer.concat(chunks).toString()).toBe('bytes');
  expect(seen[0]).toBe(`/products/run.grib Basic ${Buffer.from('reader:secret').toString('base64')}`);
  await expect(method.fetch!(host(), '/products/none.grib', AbortSignal.timeout(5000))).rejects.toThrow(
    `HTTP GET http://127.0.0.1:${port}/products/none.grib failed: 404`,
  );
});
