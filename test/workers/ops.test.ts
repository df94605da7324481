import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { catalogue } from '../../core/catalogue.ts';
import { ApiError, createClient } from '../../functions/client/index.ts';
import { call, client, throughIsolate, worker, workerEnv } from './support.ts';

const stamp = Date.now().toString(36);

/** The Worker's fetch handler as the client's fetch, waiting for each request's background work. */
async function throughWorker(input: string, init: RequestInit, env = workerEnv): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(input, init), env, ctx);
  const body = await res.arrayBuffer();
  await waitOnExecutionContext(ctx);
  return new Response(body, { status: res.status, headers: res.headers });
}

describe('routes outside /v1, inside workerd', () => {
  it('/healthz reaches the database through Hyperdrive', async () => {
    const r = await call('GET', '/healthz');
    expect(r).toMatchObject({ status: 200, text: '{"status":"ok"}' });
    expect((await call('GET', '/healthz', { scheme: 'http' })).status).toBe(403);
  });

  it('/metrics needs the metrics permission, or ECPDS_METRICS_PUBLIC', async () => {
    expect((await call('GET', '/metrics')).status).toBe(401);
    const other = await client(`wnometrics_${stamp}`, ['datafileSize']);
    expect((await call('GET', '/metrics', { auth: other })).json).toEqual({
      status: 'error',
      message: 'User not authorized',
    });
    const reader = await client(`wmetrics_${stamp}`, ['metrics']);
    const r = await call('GET', '/metrics', { auth: reader });
    expect(r.status).toBe(200);
    // The app lives as long as its isolate: the counters hold the requests before this one too.
    expect(r.text).toContain('ecpds_http_requests_in_flight 1');
    expect(r.text).toMatch(/ecpds_http_requests_total\{service="metrics",status="401"\} [1-9]/);
    const publicEnv = { ...workerEnv, ECPDS_METRICS_PUBLIC: '1' };
    const open = await throughIsolate(publicEnv, new Request('https://edge.test/metrics'));
    expect(open.status).toBe(200);
  });

  it('/openapi.json and /docs are generated inside the Worker too', async () => {
    const doc = (await call('GET', '/openapi.json')).json;
    expect(doc.openapi).toBe('3.1.0');
    const operations = Object.entries(doc.paths)
      .filter(([p]) => p.startsWith('/v1/'))
      .flatMap(([, item]) => Object.values(item as object));
    expect(operations).toHaveLength(Object.keys(catalogue).length);
    const page = await throughWorker('https://edge.test/docs', {});
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'sha256-/);
  });
});

describe('the base path inside workerd', () => {
  it('/ecpds/v1/... answers as /v1/...; ECPDS_BASE_PATH moves it, empty leaves the root only', async () => {
    const auth = await client(`wbased_${stamp}`, ['destinationCountryList']);
    for (const [method, path, opts] of [
      ['GET', '/v1/version', {}],
      ['GET', '/v1/destination/country/list', { auth }],
      ['GET', '/v1/destination/list', { auth }],
      ['PUT', '/v1/version', {}],
      ['GET', '/v1/nosuch', {}],
    ] as const) {
      const root = await call(method, path, opts);
      const based = await call(method, `/ecpds${path}`, opts);
      expect([based.status, based.text, based.headers.get('allow')]).toEqual([
        root.status,
        root.text,
        root.headers.get('allow'),
      ]);
    }
    expect((await call('GET', '/ecpds/openapi.json')).json.servers[0].url).toBe('/ecpds');
    const custom = { ...workerEnv, ECPDS_BASE_PATH: '/dds' };
    expect((await throughIsolate(custom, new Request('https://edge.test/dds/v1/version'))).status).toBe(200);
    expect((await throughIsolate(custom, new Request('https://edge.test/ecpds/v1/version'))).status).toBe(404);
    const bare = { ...workerEnv, ECPDS_BASE_PATH: '' };
    expect((await throughIsolate(bare, new Request('https://edge.test/ecpds/v1/version'))).status).toBe(404);
    expect((await throughIsolate(bare, new Request('https://edge.test/v1/version'))).status).toBe(200);
  });
});

describe('the typed client on Workers', () => {
  it('calls the API through a fetch of its own', async () => {
    const auth = await client(`wclient_${stamp}`, ['datafileSize|destinationCountryList']);
    const secret = atob(auth.slice('Basic '.length)).slice(`wclient_${stamp}:`.length);
    const ecpds = createClient({
      baseUrl: 'https://edge.test',
      username: `wclient_${stamp}`,
      secret,
      fetch: (input, init) => throughWorker(input, init),
    });
    expect((await ecpds.version()).status).toBe('ok');
    expect(Array.isArray((await ecpds.destinationCountryList()).countryList)).toBe(true);
    const error = await ecpds.datafileSize({ id: 987654321 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 500, message: 'DataFile 987654321 not found' });
  });
});
