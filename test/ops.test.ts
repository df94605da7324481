import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../functions/node/config.ts';
import { basic, createHarness, type Harness } from './support/harness.ts';

/** The value of one sample line of a Prometheus text answer, or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[2] ? m[2].split(',') : [];
    if (wanted.length === have.length && wanted.every((w) => have.includes(w))) return Number(m[3]);
  }
  return undefined;
}

describe('/healthz, and /metrics made public', () => {
  let h: Harness;
  let closed = false;
  beforeAll(async () => {
    h = await createHarness({ metricsPublic: true });
  });
  afterAll(() => (closed ? undefined : h.close()));

  it('answers 200 {"status":"ok"} without credentials while the database answers', async () => {
    const r = await h.call('GET', '/healthz');
    expect(r.status).toBe(200);
    expect(r.text).toBe('{"status":"ok"}');
    expect(r.headers.get('x-request-id')).toBeTruthy();
  });

  it('obeys the HTTPS rule', async () => {
    const r = await h.call('GET', '/healthz', { scheme: 'http' });
    expect(r.status).toBe(403);
    expect(r.text).toBe('Operation only available through a secure connection (https)');
  });

  it('serves /metrics without credentials when public, still HTTPS only, with counters of this app only', async () => {
    const r = await h.call('GET', '/metrics');
    expect(r.status).toBe(200);
    expect(sample(r.text, 'ecpds_http_requests_total', { service: 'healthz', status: '200' })).toBe(1);
    expect(sample(r.text, 'ecpds_http_requests_total', { service: 'other', status: '403' })).toBe(1);
    expect(sample(r.text, 'ecpds_http_requests_total', { service: 'datafileSize', status: '500' })).toBeUndefined();
    expect((await h.call('GET', '/metrics', { scheme: 'http' })).status).toBe(403);
  });

  it('answers 503 JSON once the database is gone', async () => {
    await h.close();
    closed = true;
    const r = await h.call('GET', '/healthz');
    expect(r.status).toBe(503);
    expect(r.json).toEqual({ status: 'error', message: 'Service unavailable: database unreachable' });
    expect(h.logLines.some((l) => l.includes('health check failed'))).toBe(true);
  });

  it('still answers /metrics once the database is gone, with ecpds_database_up 0 and no figure of it', async () => {
    const r = await h.call('GET', '/metrics');
    expect(r.status).toBe(200);
    expect(sample(r.text, 'ecpds_database_up')).toBe(0);
    expect(sample(r.text, 'ecpds_wis2_outbox_pending')).toBeUndefined();
    expect(sample(r.text, 'ecpds_http_requests_total', { service: 'healthz', status: '503' })).toBe(1);
  });
});

describe('/metrics', () => {
  let h: Harness;
  let reader: string;
  beforeAll(async () => {
    h = await createHarness();
    reader = await h.client('prometheus', ['metrics']);
  });
  afterAll(() => h.close());

  it('needs credentials: 401 plain text without them, as the API answers', async () => {
    const r = await h.call('GET', '/metrics');
    expect(r.status).toBe(401);
    expect(r.text).toBe('Operation only available to registered users');
    expect(r.headers.get('www-authenticate')).toBe('Basic realm="ECPDS"');
  });

  it('needs the metrics permission: a client without it, or a wrong secret, gets User not authorized', async () => {
    const other = await h.client('sizer', ['datafileSize']);
    for (const auth of [other, basic('prometheus', 'wrong')]) {
      const r = await h.call('GET', '/metrics', { auth });
      expect(r.status).toBe(500);
      expect(r.json).toEqual({ status: 'error', message: 'User not authorized' });
    }
    const all = await h.client('root', ['.*']);
    expect((await h.call('GET', '/metrics', { auth: all })).status).toBe(200);
    expect((await h.call('GET', '/metrics', { auth: reader, scheme: 'http' })).status).toBe(403);
  });

  it('counts requests by service and status, with a latency histogram', async () => {
    const sizer = await h.client('sizer2', ['datafileSize']);
    await h.call('GET', '/v1/datafile/size?id=999', { auth: sizer });
    await h.call('GET', '/v1/datafile/size?id=999', { auth: sizer });
    await h.call('GET', '/v1/datafile/size?id=abc', { auth: sizer });
    await h.call('GET', '/v1/version');
    await h.call('GET', '/v1/destination/type/list', { auth: sizer });
    await h.call('GET', '/healthz');
    await h.call('GET', '/no/such/path');
    const r = await h.call('GET', '/metrics', { auth: reader });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = r.text;
    expect(text).toContain('# TYPE ecpds_http_requests_total counter');
    expect(text).toContain('# TYPE ecpds_http_request_duration_seconds histogram');
    expect(sample(text, 'ecpds_http_requests_total', { service: 'datafileSize', status: '500' })).toBe(2);
    expect(sample(text, 'ecpds_http_requests_total', { service: 'datafileSize', status: '400' })).toBe(1);
    expect(sample(text, 'ecpds_http_requests_total', { service: 'none', status: '200' })).toBe(1);
    expect(sample(text, 'ecpds_http_requests_total', { service: 'basic', status: '200' })).toBe(1);
    expect(sample(text, 'ecpds_http_requests_total', { service: 'healthz', status: '200' })).toBe(1);
    expect(sample(text, 'ecpds_http_requests_total', { service: 'other', status: '404' })).toBe(1);
    expect(sample(text, 'ecpds_http_requests_total', { service: 'metrics', status: '401' })).toBeGreaterThanOrEqual(1);

    const count = sample(text, 'ecpds_http_request_duration_seconds_count', { service: 'datafileSize' });
    expect(count).toBe(3);
    expect(sample(text, 'ecpds_http_request_duration_seconds_bucket', { service: 'datafileSize', le: '+Inf' })).toBe(3);
    const buckets = ['0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '+Inf'].map(
      (le) => sample(text, 'ecpds_http_request_duration_seconds_bucket', { service: 'datafileSize', le })!,
    );
    expect(buckets.every((n, i) => i === 0 || n >= buckets[i - 1]!)).toBe(true);
    expect(sample(text, 'ecpds_http_request_duration_seconds_sum', { service: 'datafileSize' })).toBeGreaterThan(0);
    // The request being answered is the /metrics call itself.
    expect(sample(text, 'ecpds_http_requests_in_flight')).toBe(1);
  });
});

describe('ECPDS_METRICS_PUBLIC', () => {
  it('is off unless set, and refuses a value that is not a flag', () => {
    expect(parseConfig({}).metricsPublic).toBe(false);
    expect(parseConfig({ ECPDS_METRICS_PUBLIC: '1' }).metricsPublic).toBe(true);
    expect(() => parseConfig({ ECPDS_METRICS_PUBLIC: 'maybe' })).toThrow(/expected 1\/0/);
  });
});
