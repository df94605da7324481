import http from 'node:http';
import { Readable } from 'node:stream';

/**
 * A fetch that sends every request to 127.0.0.1:`port` whatever the URL's host, keeping that host
 * in the Host header: virtual-hosted S3 names (`bucket.s3.localhost`) reach the test server
 * without DNS. Node's fetch ignores a Host header it is given, hence node:http.
 */
export function loopbackFetch(port: number): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(String(input));
    const headers = Object.fromEntries(new Headers(init.headers));
    const method = init.method ?? 'GET';
    return new Promise<Response>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method,
          path: url.pathname + url.search,
          headers: { ...headers, host: url.host },
          signal: init.signal ?? undefined,
        },
        (res) => {
          const empty = method === 'HEAD' || [204, 205, 304].includes(res.statusCode!);
          const body = empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
          if (empty) res.resume();
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, String(v));
          resolve(new Response(body, { status: res.statusCode, headers: h }));
        },
      );
      req.on('error', reject);
      const body = init.body;
      if (body instanceof ReadableStream) Readable.fromWeb(body as never).pipe(req);
      else if (body === null || body === undefined) req.end();
      else req.end(body as Uint8Array | string);
    });
  }) as typeof fetch;
}
