import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectStore } from '../../core/store/ports.ts';
import { servedDocument } from '../../functions/http/docs.ts';
import { createHarness, type Harness } from '../support/harness.ts';

// A balancer in front of a TLS-terminating proxy probes the server itself, over plain HTTP and without
// X-Forwarded-Proto: /healthz and /readyz must answer it, and say no more than their status.

const NOT_SECURE = 'Operation only available through a secure connection (https)';
const PROBES = ['/healthz', '/readyz', '/ecpds/healthz', '/ecpds/readyz'];

/** A store that refuses every write, its description and error naming a place the probe must not reveal. */
function refusingStore(): ObjectStore {
  const description = `directory /srv/hidden-${crypto.randomUUID()}`;
  const refused = () => Promise.reject(new Error(`EACCES: permission denied, open '/srv/hidden/x' on db-7.internal`));
  return {
    description,
    write: refused,
    read: refused,
    remove: () => Promise.resolve(),
    list: async function* () {},
  };
}

describe('probes behind a trusted proxy', () => {
  let h: Harness;
  let closed = false;
  beforeAll(async () => {
    h = await createHarness({ trustProxy: true, metricsPublic: true, store: refusingStore() });
  });
  afterAll(() => (closed ? undefined : h.close()));

  it.each(PROBES)('answers GET %s over plain HTTP without X-Forwarded-Proto', async (path) => {
    const r = await h.call('GET', path, { scheme: 'http' });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: path.endsWith('readyz') ? 'ready' : 'degraded' });
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it.each(PROBES)('answers HEAD %s over plain HTTP, without a body', async (path) => {
    const r = await h.call('HEAD', path, { scheme: 'http' });
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
  });

  it('says over plain HTTP nothing of the store, which it names over HTTPS', async () => {
    const plain = await h.call('GET', '/healthz', { scheme: 'http' });
    expect(plain.text).toBe('{"status":"degraded"}');
    expect(plain.text).not.toMatch(/hidden|EACCES|internal/);
    const secure = await h.call('GET', '/healthz', { scheme: 'http', headers: { 'x-forwarded-proto': 'https' } });
    expect(secure.status).toBe(200);
    expect(secure.json).toMatchObject({ status: 'degraded', store: { status: 'failing' } });
    expect(secure.json.store.description).toMatch(/^directory \/srv\/hidden-/);
    expect((await h.call('GET', '/readyz', { headers: { 'x-forwarded-proto': 'https' } })).json).toEqual({
      status: 'ready',
    });
  });

  it.each([
    ['GET', '/v1/version'],
    ['GET', '/ecpds/v1/version'],
    ['GET', '/metrics'],
    ['GET', '/ecpds/metrics'],
    ['GET', '/openapi.json'],
    ['GET', '/docs'],
    ['GET', '/console'],
    ['GET', '/portal/'],
    ['GET', '/healthz/'],
    ['GET', '/readyzz'],
    ['GET', '/v1/healthz'],
    ['GET', '/console/healthz'],
    ['GET', '/portal/readyz'],
    ['POST', '/healthz'],
    ['PUT', '/readyz'],
    ['DELETE', '/ecpds/readyz'],
    ['OPTIONS', '/healthz'],
  ])('still refuses %s %s over plain HTTP without the header', async (method, path) => {
    const r = await h.call(method, path, { scheme: 'http' });
    expect(r.status).toBe(403);
    expect(r.text).toBe(NOT_SECURE);
  });

  it('counts the probes under their own labels in /metrics', async () => {
    const r = await h.call('GET', '/metrics', { headers: { 'x-forwarded-proto': 'https' } });
    expect(r.status).toBe(200);
    expect(r.text).toMatch(/^ecpds_http_requests_total\{service="readyz",status="200"\} \d+$/m);
    expect(r.text).toMatch(/^ecpds_http_requests_total\{service="healthz",status="200"\} \d+$/m);
  });

  it('answers 503 once the database is gone, with the status only over plain HTTP', async () => {
    await h.close();
    closed = true;
    for (const path of ['/readyz', '/ecpds/readyz']) {
      for (const headers of [{}, { 'x-forwarded-proto': 'https' }] as Record<string, string>[]) {
        const r = await h.call('GET', path, { scheme: 'http', headers });
        expect(r.status).toBe(503);
        expect(r.text).toBe('{"status":"not ready"}');
      }
    }
    const health = await h.call('GET', '/healthz', { scheme: 'http' });
    expect(health.status).toBe(503);
    expect(health.text).toBe('{"status":"error"}');
    const head = await h.call('HEAD', '/readyz', { scheme: 'http' });
    expect(head.status).toBe(503);
    expect(head.text).toBe('');
    // The reason goes to the log only.
    const failed = h.logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'readiness check failed');
    expect(failed.length).toBeGreaterThan(0);
    expect(failed[0].reason).toBeTruthy();
  });

  it('keeps /healthz over HTTPS as it was once the database is gone', async () => {
    const r = await h.call('GET', '/healthz', { headers: { 'x-forwarded-proto': 'https' } });
    expect(r.status).toBe(503);
    expect(r.json).toEqual({ status: 'error', message: 'Service unavailable: database unreachable' });
  });
});

describe('probes without a trusted proxy', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('answers /readyz over HTTPS', async () => {
    const r = await h.call('GET', '/readyz');
    expect(r.status).toBe(200);
    expect(r.text).toBe('{"status":"ready"}');
    expect((await h.call('GET', '/ecpds/readyz')).text).toBe('{"status":"ready"}');
  });

  it.each(PROBES)('refuses %s over plain HTTP, X-Forwarded-Proto or not', async (path) => {
    for (const headers of [{}, { 'x-forwarded-proto': 'https' }] as Record<string, string>[]) {
      for (const method of ['GET', 'HEAD']) {
        const r = await h.call(method, path, { scheme: 'http', headers });
        expect(r.status).toBe(403);
      }
    }
  });
});

describe('/readyz in the OpenAPI document', () => {
  it('is documented without security, its answers being the status only', () => {
    const doc = servedDocument() as any;
    const op = doc.paths['/readyz'].get;
    expect(op.security).toEqual([]);
    expect(Object.keys(op.responses)).toEqual(['200', '403', '503']);
    expect(op.responses[503].content['application/json'].example).toEqual({ status: 'not ready' });
  });
});
