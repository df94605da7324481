import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogue, SERVICE_NAMES } from '../core/catalogue.ts';
import { VERSION } from '../core/system/version.ts';
import pkg from '../package.json' with { type: 'json' };
import { basic, createHarness, type Harness } from './support/harness.ts';

let h: Harness;
let admin: string;
beforeAll(async () => {
  h = await createHarness();
  admin = await h.client('admin', ['.*']);
});
afterAll(() => h.close());

describe('catalogue', () => {
  it('holds the 31 operations of the API, the destination option added, and every permission name', () => {
    expect(Object.keys(catalogue)).toHaveLength(32);
    expect(SERVICE_NAMES).toHaveLength(26);
    expect(SERVICE_NAMES.at(-1)).toBe('showSensitiveInfo');
  });
});

describe('GET /v1/version', () => {
  it('answers the release version without credentials', async () => {
    const r = await h.call('GET', '/v1/version');
    expect(r.status).toBe(200);
    expect(r.text).toBe(`{"status":"ok","version":"${VERSION}"}`);
    expect(VERSION).toMatch(new RegExp(`^${pkg.version.replace(/\./g, '\\.')}-\\d{8}$`));
    expect(r.headers.get('x-request-id')).toBeTruthy();
  });

  it('carries the same response headers on answers and on errors, echoing a well-formed request id', async () => {
    for (const [path, status] of [
      ['/v1/version', 200],
      ['/v1/destination/list', 401],
      ['/v1/nowhere', 404],
    ] as const) {
      const r = await h.call('GET', path, { headers: { 'x-request-id': 'trace-42' } });
      expect(r.status, path).toBe(status);
      expect(r.headers.get('x-request-id'), path).toBe('trace-42');
      expect(r.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
    const r = await h.call('GET', '/v1/version', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(r.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.headers.get('content-type')).toBe('application/json');
  });

  it('answers 403 over plain HTTP', async () => {
    const r = await h.call('GET', '/v1/version', { scheme: 'http' });
    expect(r.status).toBe(403);
    expect(r.text).toBe('Operation only available through a secure connection (https)');
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
  });
});

describe('HTTP-level answers', () => {
  it('403 over plain HTTP comes before the 401 check', async () => {
    const r = await h.call('GET', '/v1/incoming/user/list', { scheme: 'http' });
    expect(r.status).toBe(403);
  });

  it.each([
    ['no header', undefined],
    ['another scheme', 'Bearer abc'],
    ['not base64', 'Basic !!!!'],
    ['bad padding', 'Basic YWRtaW46eA'],
    ['no colon', `Basic ${Buffer.from('admin').toString('base64')}`],
    ['empty username', `Basic ${Buffer.from(':secret').toString('base64')}`],
  ])('401 with a plain-text body for %s', async (_, auth) => {
    const r = await h.call('GET', '/v1/incoming/user/list', { auth });
    expect(r.status).toBe(401);
    expect(r.text).toBe('Operation only available to registered users');
    expect(r.headers.get('www-authenticate')).toBe('Basic realm="ECPDS"');
  });

  it('accepts the Basic scheme in any case and a secret containing colons', async () => {
    const { secret } = await import('../core/api-clients/clients.ts').then((m) =>
      m.create(h.ports, 'test', { username: 'colon', permissions: ['incomingUserList'], origin: 'cli' }),
    );
    const token = Buffer.from(`colon:${secret}`).toString('base64');
    expect((await h.call('GET', '/v1/incoming/user/list', { auth: `bAsIc ${token}` })).status).toBe(200);
    expect((await h.call('GET', '/v1/incoming/user/list', { auth: basic('colon', `${secret}:x`) })).json).toEqual({
      status: 'error',
      message: 'User not authorized',
    });
  });

  it('412 for a missing or blank required parameter, before credentials are checked', async () => {
    const r = await h.call('GET', '/v1/incoming/association/list', { auth: basic('nobody', 'wrong') });
    expect(r.status).toBe(412);
    expect(r.text).toBe('Missing parameter: id');
    const blank = await h.call('GET', '/v1/incoming/association/list?id=%20', { auth: admin });
    expect(blank.status).toBe(412);
  });

  it('reports the first missing parameter in catalogue order before any type error', async () => {
    const r = await h.call('POST', '/v1/incoming/user/add?active=maybe&pass=x', { auth: admin });
    expect(r.status).toBe(412);
    expect(r.text).toBe('Missing parameter: id');
  });

  it('400 names the parameter and what was expected', async () => {
    const r = await h.call('POST', '/v1/incoming/user/add2?id=u&email=u@example.org&iso=gb&active=maybe', {
      auth: admin,
    });
    expect(r.status).toBe(400);
    expect(r.text).toBe("Invalid value for parameter active: 'maybe' (true or false expected)");
    const e = await h.call('POST', '/v1/incoming/user/add2?id=u&email=u@example.org&iso=gb&portalService=Open-Access', {
      auth: admin,
    });
    expect(e.status).toBe(400);
    expect(e.text).toBe(
      "Invalid value for parameter portalService: 'Open-Access' " +
        '(one of standard-login, open-access, self-service expected)',
    );
  });

  it('400 for a type error comes before the permission check', async () => {
    const r = await h.call('POST', '/v1/incoming/user/add2?id=u&email=u@example.org&iso=gb&active=1', {
      auth: basic('nobody', 'x'),
    });
    expect(r.status).toBe(400);
  });

  it('400 for an invalid JSON body', async () => {
    const r = await h.call('POST', '/v1/incoming/category/add?id=u', { auth: admin, body: '[oops' });
    expect(r.status).toBe(400);
    expect(r.text).toMatch(/^Invalid JSON body: /);
  });

  it('400 for invalid JSON stays one printable line when the body holds line breaks', async () => {
    for (const body of ['["a\r\nb" x]', '{"a":\u0001\n}', '["\u2028" oops]']) {
      const r = await h.call('POST', '/v1/incoming/category/add?id=u', { auth: admin, body });
      expect(r.status).toBe(400);
      expect(r.text).toMatch(/^Invalid JSON body: [^\r\n\u2028\u2029\u0000-\u001f]+$/);
    }
  });

  it('an integer beyond a 32-bit column matches nothing instead of failing in the database', async () => {
    for (const type of ['2147483648', '-2147483649', '9007199254740991']) {
      const r = await h.call('GET', `/v1/destination/list?type=${type}`, { auth: admin });
      expect([r.status, r.json]).toEqual([500, { status: 'error', message: `Type ${type} not found` }]);
    }
    const steps = await h.call('GET', '/v1/monitoring/summary?step=2147483648', { auth: admin });
    expect([steps.status, steps.json.stepStatusList]).toEqual([200, []]);
    const big = await h.call('GET', '/v1/datafile/size?id=9007199254740991', { auth: admin });
    expect([big.status, big.json]).toEqual([500, { status: 'error', message: 'DataFile 9007199254740991 not found' }]);
  });

  it('413 for a body over the limit', async () => {
    const r = await h.call('POST', '/v1/incoming/category/add?id=u', {
      auth: admin,
      body: JSON.stringify(['x'.repeat(2 * 1024 * 1024)]),
    });
    expect(r.status).toBe(413);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
  });

  it('404 for an unknown path, 405 with Allow for a wrong method', async () => {
    const r = await h.call('GET', '/v1/nothing/here', { auth: admin });
    expect(r.status).toBe(404);
    expect(r.text).toBe('Not found');
    const m = await h.call('GET', '/v1/incoming/user/add', { auth: admin });
    expect(m.status).toBe(405);
    expect(m.headers.get('allow')).toBe('POST');
  });

  it('never logs the Authorization header or a secret', async () => {
    const secret = admin.slice('Basic '.length);
    await h.call('GET', '/v1/incoming/user/list', { auth: admin });
    const log = h.logLines.join('\n');
    expect(log).toContain('"msg":"request"');
    expect(log).not.toContain(secret);
    expect(log).not.toContain(Buffer.from(secret, 'base64').toString().split(':')[1]);
  });
});

describe('permissions', () => {
  it('an expression must match the whole service name', async () => {
    const partial = await h.client('partial', ['incomingUser']);
    const r = await h.call('GET', '/v1/incoming/user/list', { auth: partial });
    expect(r.status).toBe(500);
    expect(r.json).toEqual({ status: 'error', message: 'User not authorized' });
    const prefix = await h.client('prefix', ['incomingUser.*']);
    expect((await h.call('GET', '/v1/incoming/user/list', { auth: prefix })).status).toBe(200);
  });

  it('any one expression of the list may grant the service; alternatives with |', async () => {
    const multi = await h.client('multi', ['webUserList', 'incomingUserList|incomingAssociationList']);
    expect((await h.call('GET', '/v1/incoming/user/list', { auth: multi })).status).toBe(200);
    expect((await h.call('GET', '/v1/web/user/list', { auth: multi })).status).toBe(200);
    expect((await h.call('POST', '/v1/web/user/add2?id=x', { auth: multi })).json.message).toBe('User not authorized');
  });

  it('service names are case-sensitive', async () => {
    const lower = await h.client('lower', ['incominguserlist']);
    expect((await h.call('GET', '/v1/incoming/user/list', { auth: lower })).json.message).toBe('User not authorized');
  });

  it('a wrong secret, an unknown user and a missing permission give the same answer', async () => {
    const none = await h.client('none', []);
    const answers = await Promise.all([
      h.call('GET', '/v1/incoming/user/list', { auth: basic('admin', 'wrong') }),
      h.call('GET', '/v1/incoming/user/list', { auth: basic('ghost', 'whatever') }),
      h.call('GET', '/v1/incoming/user/list', { auth: none }),
    ]);
    for (const a of answers) {
      expect(a.status).toBe(500);
      expect(a.text).toBe('{"status":"error","message":"User not authorized"}');
    }
  });
});

describe('trust-proxy mode', () => {
  it('counts a request as secure only with X-Forwarded-Proto: https', async () => {
    const proxied = await createHarness({ trustProxy: true });
    try {
      expect((await proxied.call('GET', '/v1/version', { scheme: 'http' })).status).toBe(403);
      expect((await proxied.call('GET', '/v1/version', { scheme: 'https' })).status).toBe(403);
      const ok = await proxied.call('GET', '/v1/version', {
        scheme: 'http',
        headers: { 'x-forwarded-proto': 'https' },
      });
      expect(ok.status).toBe(200);
      expect(
        (await proxied.call('GET', '/v1/version', { scheme: 'http', headers: { 'x-forwarded-proto': 'http' } })).status,
      ).toBe(403);
    } finally {
      await proxied.close();
    }
  });

  it('ignores X-Forwarded-Proto when trust-proxy is off', async () => {
    const r = await h.call('GET', '/v1/version', { scheme: 'http', headers: { 'x-forwarded-proto': 'https' } });
    expect(r.status).toBe(403);
  });
});
