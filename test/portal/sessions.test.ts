import { type Context, Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Base64 } from '../../core/common/crypto.ts';
import { PortalLoginRefused } from '../../core/portal/access.ts';
import { revokeSubscriber } from '../../core/portal/registration.ts';
import { openPostgres } from '../../db/client.ts';
import { portalPages } from '../../functions/portal/pages/index.ts';
import { portalSessionIdentity, refuseWithoutCsrf } from '../../functions/portal/session.ts';
import { createPorts, createProcessState } from '../../functions/ports.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { Agent, incomingUser, setActive } from './agent.ts';

/**
 * The portal's browser sessions through its pages and the hook the file routes call (mounted here
 * on a test route): the cookie, the login form's answers, an hour's sliding idle time, log-out,
 * CSRF, and the login check again on every request.
 */
let h: Harness;
let admin: string;
let now = new Date('2026-11-27T08:00:00.000Z');
let subscriberId = 0;
const MINUTE = 60_000;

beforeAll(async () => {
  h = await createHarness({
    portalPages: true,
    failedAuth: { failedAuthRules: { refusePairAt: 5 }, sleep: async () => {} },
  });
  const identify = portalSessionIdentity({
    portsFor: () => h.ports,
    cookieSecret: h.ports.secrets.derive('portal-cookie'),
    clientAddress: (c) => c.req.header('x-test-address') ?? 'test',
  });
  // Stand-ins for the file routes: who the session is, and a form post that needs its token.
  h.app.get('/portal/test/whoami', whoamiRoute(identify));
  h.app.post('/portal/test/form', async (c) => {
    const found = await identify(c);
    if (!found) return c.text('no session', 401);
    return (await refuseWithoutCsrf(c, found.csrf)) ?? c.text('accepted');
  });
  h.ports.clock = () => now;

  admin = await h.client('admin', ['.*']);
  await h.addDestination('SESS');
  await incomingUser(h, admin, { id: 'std', mode: 'standard-login', password: 'Std-Pass-1', destination: 'SESS' });
  await incomingUser(h, admin, { id: 'std2', mode: 'standard-login', password: 'Std-Pass-2', destination: 'SESS' });
  await incomingUser(h, admin, { id: 'lonely', mode: 'standard-login', password: 'Lonely-Pass-1' });
  await incomingUser(h, admin, { id: 'off', mode: 'standard-login', password: 'Off-Pass-1', active: false });
  await incomingUser(h, admin, { id: 'open', mode: 'open-access', destination: 'SESS' });
  await incomingUser(h, admin, { id: 'selfs', mode: 'self-service', password: 'Selfs-Own-1', destination: 'SESS' });
  const { portal } = h.ports.repos;
  const expires = new Date(now.getTime() + 3600_000);
  const id = await portal.addSubscriber(
    { userId: 'selfs', name: 'Sub', email: 'sub@example.org', iso: 'gb', tokenHash: 't', tokenExpiresAt: expires },
    now,
  );
  await portal.changeSubscriber(id!, ['unverified'], {
    status: 'active',
    at: now,
    passwordHash: sha256Base64('Sub-Pass-1'),
    clearToken: true,
  });
  subscriberId = id!;
});
afterAll(() => h?.close());

/** Who the session is, as the file routes would ask; asking twice in a request resolves it once. */
const whoamiRoute = (identify: ReturnType<typeof portalSessionIdentity>) => async (c: Context) => {
  try {
    const found = await identify(c);
    expect(await identify(c)).toBe(found);
    return c.json(found && { login: found.login, csrf: found.csrf, subscriber: found.identity.subscriberId });
  } catch (e) {
    if (e instanceof PortalLoginRefused) return c.text(e.message, e.overLimit ? 429 : 401);
    throw e;
  }
};
const whoami = async (agent: Agent) => {
  const page = await agent.get('/portal/test/whoami');
  return { status: page.status, who: page.status === 200 ? JSON.parse(page.text) : null, page };
};
async function loggedIn(login = 'std', password = 'Std-Pass-1') {
  const agent = new Agent(h.app);
  const page = await agent.login(login, password);
  expect([page.status, page.location]).toEqual([303, '/portal/data/']);
  return agent;
}
const alert = (page: { text: string }) => /role="alert">([^<]*)</.exec(page.text)?.[1];
const lastDea = () => h.events.filter((e) => e.startsWith('DEA;')).at(-1) ?? '';

describe('logging in', () => {
  it('opens a session: a signed, HttpOnly, Secure, SameSite=Lax cookie for /portal whose token is stored hashed', async () => {
    const agent = new Agent(h.app);
    const page = await agent.login('std', 'Std-Pass-1');
    expect([page.status, page.location]).toEqual([303, '/portal/data/']);
    const cookie = page.setCookies.find((c) => c.startsWith('ecpds_portal='))!;
    expect(cookie.split('; ').slice(1).sort()).toEqual(
      ['HttpOnly', 'Max-Age=86400', 'Path=/portal', 'SameSite=Lax', 'Secure'].sort(),
    );
    const token = decodeURIComponent(agent.jar.get('ecpds_portal')!).split('.')[0]!;
    expect(token).toMatch(/^[\w-]{43}$/);
    const session = await h.ports.repos.portal.session(sha256Base64(token));
    expect(session).toMatchObject({ userId: 'std', subscriberId: null, lastSeenAt: now });
    expect(await h.ports.repos.portal.session(token)).toBeNull();
    const { who } = await whoami(agent);
    expect(who).toMatchObject({ login: 'std', subscriber: null });
    expect(who.csrf).toBe(session!.csrf);
    // Already logged in: the form leads on.
    expect((await agent.get('/portal/login')).location).toBe('/portal/data/');
    expect((await agent.get('/portal/login?next=/portal/data/SESS/')).location).toBe('/portal/data/SESS/');
  });

  it('goes on to `next` only when it is a path of the portal on this site', async () => {
    const cases: Array<[string, string]> = [
      ['/portal/data/SESS/a%20b/?sort=name', '/portal/data/SESS/a%20b/?sort=name'],
      ['/portal/data/../data/SESS/', '/portal/data/SESS/'],
      ['https://elsewhere.example/portal/', '/portal/data/'],
      ['//elsewhere.example/portal/', '/portal/data/'],
      ['/portal/..//elsewhere.example/', '/portal/data/'],
      ['/portal/\\\\elsewhere.example/', '/portal/data/'],
      ['/portal/../console/', '/portal/data/'],
      ['/portal/%2e%2e/console/', '/portal/data/'],
      ['/console/', '/portal/data/'],
    ];
    for (const [next, location] of cases) {
      const page = await new Agent(h.app).login('std', 'Std-Pass-1', next);
      expect([page.status, page.location], next).toEqual([303, location]);
    }
  });

  it('answers `Login failed` with the form again whatever the reason; the reason goes to a DEA line', async () => {
    const cases: Array<[string, string, string]> = [
      ['nobody', 'whatever', 'Not found'],
      ['std', 'wrong password', 'Password authentication failed'],
      ['off', 'Off-Pass-1', 'Disabled'],
      ['lonely', 'Lonely-Pass-1', 'No associated Destinations'],
      ['selfs', 'Selfs-Own-1', 'Subscriber password authentication failed'],
    ];
    for (const [login, password, reason] of cases) {
      const agent = new Agent(h.app);
      const page = await agent.login(login, password);
      expect([page.status, alert(page)], login).toEqual([401, 'Login failed']);
      expect(page.csrf, 'the form again').toBeTruthy();
      expect(page.text).toContain(`value="${login}"`);
      expect(page.text).not.toContain(reason);
      expect(agent.jar.has('ecpds_portal')).toBe(false);
      expect(lastDea(), login).toMatch(new RegExp(`^DEA;.*UserId=${login};Message=${reason};Context=https:`));
    }
  });

  it('answers 429 when the login is throttled or the user is over a limit, still saying only `Login failed`', async () => {
    const agent = new Agent(h.app);
    for (let i = 0; i < 5; i++) expect((await agent.login('std2', `wrong-${i}`)).status).toBe(401);
    const throttled = await agent.login('std2', 'Std-Pass-2');
    expect([throttled.status, alert(throttled)]).toEqual([429, 'Login failed']);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    // From another address the right password still gets in.
    await loggedIn('std2', 'Std-Pass-2');

    await h.ports.repos.portal.setOption('std2', 'portal.maxConnections', '0');
    const over = await new Agent(h.app).login('std2', 'Std-Pass-2');
    expect([over.status, alert(over)]).toEqual([429, 'Login failed']);
    expect(lastDea()).toContain('Message=Maximum number of connections exceeded (0)');
    await h.ports.repos.portal.setOption('std2', 'portal.maxConnections', null);
  });

  it('sends an open-access user to its public files, with no session', async () => {
    const agent = new Agent(h.app);
    const page = await agent.login('open', 'anything');
    expect([page.status, page.location]).toEqual([303, '/portal/home/open/']);
    expect(agent.jar.has('ecpds_portal')).toBe(false);
  });

  it('refuses a login post without the form token of its browser', async () => {
    const agent = new Agent(h.app);
    const page = await agent.request('POST', '/portal/login', { login: 'std', password: 'Std-Pass-1' });
    expect(page.status).toBe(403);
    const other = await new Agent(h.app).get('/portal/login');
    await agent.get('/portal/login');
    const forged = await agent.request('POST', '/portal/login', {
      login: 'std',
      password: 'Std-Pass-1',
      csrf: other.csrf!,
    });
    expect(forged.status).toBe(403);
    expect(agent.jar.has('ecpds_portal')).toBe(false);
  });

  it('refuses a form body far larger than its fields', async () => {
    const agent = new Agent(h.app);
    const form = await agent.get('/portal/login');
    const page = await agent.request('POST', '/portal/login', {
      csrf: form.csrf!,
      login: 'std',
      password: 'x'.repeat(64 * 1024),
    });
    expect(page.status).toBe(413);
  });

  it('serves the form with no-store, a strict CSP and no framing, and the stylesheet', async () => {
    const agent = new Agent(h.app);
    const page = await agent.get('/portal/login');
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('content-security-policy')).toBe(
      "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.text).toContain('<meta name="viewport" content="width=device-width, initial-scale=1"/>');
    expect(page.text).not.toMatch(/(src|href)="(https?:)?\/\//);
    const css = await agent.get('/portal/assets/portal.css');
    expect([css.status, css.headers.get('content-type')]).toEqual([200, 'text/css; charset=utf-8']);
  });
});

describe('a session', () => {
  it('ends after an hour without a request, and each request within the hour moves that on', async () => {
    const start = now;
    const agent = await loggedIn();
    const key = agent.sessionKey()!;
    const at = (ms: number) => (now = new Date(start.getTime() + ms));
    try {
      at(30_000);
      expect((await whoami(agent)).status).toBe(200);
      // Written at most once a minute.
      expect((await h.ports.repos.portal.session(key))?.lastSeenAt).toEqual(start);
      at(59 * MINUTE);
      expect((await whoami(agent)).status).toBe(200);
      expect((await h.ports.repos.portal.session(key))?.lastSeenAt).toEqual(now);
      at(118 * MINUTE);
      expect((await whoami(agent)).status).toBe(200);
      at(178 * MINUTE + 1000);
      const ended = await whoami(agent);
      expect([ended.status, ended.who]).toEqual([200, null]);
      expect(ended.page.setCookies.join()).toMatch(/ecpds_portal=; Max-Age=0; Path=\/portal/);
      expect(await h.ports.repos.portal.session(key)).toBeNull();
    } finally {
      now = new Date(start.getTime() + 180 * MINUTE);
    }
  });

  it('logs out with its CSRF token, and only with it', async () => {
    const agent = await loggedIn();
    const { who } = await whoami(agent);
    expect((await agent.request('POST', '/portal/logout', { csrf: 'forged' })).status).toBe(403);
    expect((await agent.request('POST', '/portal/logout')).status).toBe(403);
    expect((await whoami(agent)).who).not.toBeNull();
    const key = agent.sessionKey()!;
    const out = await agent.request('POST', '/portal/logout', { csrf: who.csrf });
    expect([out.status, out.location]).toEqual([303, '/portal/logout']);
    expect(agent.jar.has('ecpds_portal')).toBe(false);
    expect(await h.ports.repos.portal.session(key)).toBeNull();
    expect((await whoami(agent)).who).toBeNull();
  });

  it("gives the file routes a check of the session's CSRF token, as a form field or a header", async () => {
    const agent = await loggedIn();
    const { who } = await whoami(agent);
    expect((await agent.request('POST', '/portal/test/form', { name: 'x' })).status).toBe(403);
    expect((await agent.request('POST', '/portal/test/form', { csrf: 'forged' })).status).toBe(403);
    expect((await agent.request('POST', '/portal/test/form', { csrf: who.csrf })).text).toBe('accepted');
    const withHeader = await agent.request('POST', '/portal/test/form', undefined, { 'x-csrf-token': who.csrf });
    expect(withHeader.text).toBe('accepted');
    // Another session's token is not this one's.
    const other = (await whoami(await loggedIn())).who;
    expect((await agent.request('POST', '/portal/test/form', { csrf: other.csrf })).status).toBe(403);
  });

  it('is refused at the next request once its user is disabled, and stays ended when it is enabled again', async () => {
    const agent = await loggedIn('std2', 'Std-Pass-2');
    const key = agent.sessionKey()!;
    await setActive(h, admin, 'std2', false);
    expect((await whoami(agent)).who).toBeNull();
    expect(lastDea()).toMatch(/UserId=std2;Message=Disabled;/);
    expect(await h.ports.repos.portal.session(key)).toBeNull();
    await setActive(h, admin, 'std2', true);
    expect((await whoami(agent)).who).toBeNull();
    await loggedIn('std2', 'Std-Pass-2');
  });

  it("of a subscriber ends when the subscriber is revoked, and one of the user's own when its mode changes", async () => {
    const subscriber = await loggedIn('selfs', 'Sub-Pass-1');
    expect((await whoami(subscriber)).who).toMatchObject({ login: 'selfs', subscriber: subscriberId });
    await revokeSubscriber(h.ports, subscriberId);
    expect((await whoami(subscriber)).who).toBeNull();
    expect((await new Agent(h.app).login('selfs', 'Sub-Pass-1')).status).toBe(401);

    const own = await loggedIn('std2', 'Std-Pass-2');
    const change = new URLSearchParams({
      id: 'std2',
      email: 'std2@example.org',
      iso: 'gb',
      portalService: 'self-service',
    });
    expect((await h.call('POST', `/v1/incoming/user/add2?${change}`, { auth: admin })).status).toBe(200);
    expect((await whoami(own)).who).toBeNull();
  });

  it("ends when its user's password changes, not when the same password is given again", async () => {
    await incomingUser(h, admin, { id: 'pwd', mode: 'standard-login', password: 'Pwd-Pass-1', destination: 'SESS' });
    const agent = await loggedIn('pwd', 'Pwd-Pass-1');
    const key = agent.sessionKey()!;
    const setPassword = (pass: string) =>
      h.call(
        'POST',
        `/v1/incoming/user/add?${new URLSearchParams({ id: 'pwd', email: 'p@example.org', iso: 'gb', pass })}`,
        {
          auth: admin,
        },
      );
    expect((await setPassword('Pwd-Pass-1')).status).toBe(200);
    expect((await whoami(agent)).who).toMatchObject({ login: 'pwd' });
    expect((await setPassword('Pwd-Pass-2')).status).toBe(200);
    const ended = await whoami(agent);
    expect([ended.status, ended.who]).toEqual([200, null]);
    expect(await h.ports.repos.portal.session(key)).toBeNull();
    // Setting it back does not revive it; the new password opens a new one.
    expect((await setPassword('Pwd-Pass-1')).status).toBe(200);
    expect((await whoami(agent)).who).toBeNull();
    await loggedIn('pwd', 'Pwd-Pass-1');
  });

  it('is kept but answered 429 while its user is over a limit that passes with time', async () => {
    const agent = await loggedIn();
    await h.ports.repos.portal.setOption('std', 'portal.maxConnections', '0');
    const over = await whoami(agent);
    expect([over.status, over.page.text]).toEqual([429, 'Login failed']);
    await h.ports.repos.portal.setOption('std', 'portal.maxConnections', null);
    expect((await whoami(agent)).who).toMatchObject({ login: 'std' });
  });

  it('is not opened by a cookie whose signature is wrong, which is cleared', async () => {
    const agent = await loggedIn();
    const value = decodeURIComponent(agent.jar.get('ecpds_portal')!);
    agent.jar.set('ecpds_portal', encodeURIComponent(`${value.split('.')[0]}.${'A'.repeat(43)}=`));
    const page = await whoami(agent);
    expect(page.who).toBeNull();
    expect(agent.jar.has('ecpds_portal')).toBe(false);
  });
});

describe('sessions on two servers', () => {
  it('hold across servers sharing the database and the secret key: opened on one, ended from the other', async () => {
    // On Postgres the second server has a connection pool of its own, as another process would.
    const url = (h.handle as { url?: string }).url;
    const own = url ? openPostgres(url, { max: 2 }) : null;
    try {
      const other = createPorts({
        db: own?.db ?? h.db,
        state: createProcessState(),
        secrets: h.ports.secrets,
        logger: { info: () => {}, warn: () => {}, error: () => {} },
        events: { write: () => {} },
        sources: h.ports.sources,
        waitUntil: () => {},
        clock: () => now,
      });
      const options = {
        portsFor: () => other,
        cookieSecret: other.secrets.derive('portal-cookie'),
        clientAddress: () => 'server-b',
      };
      const app = new Hono();
      app.get('/portal/test/whoami', whoamiRoute(portalSessionIdentity(options)));
      app.route('/portal', portalPages(options));

      const onA = await loggedIn();
      const onB = new Agent(app);
      for (const [name, value] of onA.jar) onB.jar.set(name, value);
      const { who } = await whoami(onB);
      expect(who).toMatchObject({ login: 'std', csrf: (await whoami(onA)).who.csrf });
      const out = await onB.request('POST', '/portal/logout', { csrf: who.csrf });
      expect(out.status).toBe(303);
      // The first server's browser still has the cookie; the session behind it is gone.
      expect(onA.jar.has('ecpds_portal')).toBe(true);
      expect((await whoami(onA)).who).toBeNull();
    } finally {
      await own?.close();
    }
  });
});
