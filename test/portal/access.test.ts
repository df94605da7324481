import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Base64 } from '../../core/common/crypto.ts';
import { isServiceError } from '../../core/common/errors.ts';
import { admit, PortalLoginRefused, portalLogin } from '../../core/portal/access.ts';
import { incomingUsers } from '../../db/schema.ts';
import { type Answer, failedAuthScenarios } from '../support/failed-auth-scenarios.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/** The portal's one login check, as every protocol calls it, on the suite's database. */
let h: Harness;
let admin: string;
beforeAll(async () => {
  h = await createHarness({ failedAuth: { sleep: async () => undefined } });
  admin = await h.client('admin', ['.*']);
  await h.addDestination('PORTAL_A');
});
afterAll(() => h.close());

async function user(id: string, over: Record<string, string> = {}, associated = true) {
  const query = new URLSearchParams({
    id,
    email: `${id}@example.org`,
    iso: 'gb',
    pass: `${id}-Pass-1`,
    active: 'true',
    ...over,
  });
  expect((await h.call('POST', `/v1/incoming/user/add?${query}`, { auth: admin })).status).toBe(200);
  if (associated) {
    const q = new URLSearchParams({ id, destination: 'PORTAL_A' });
    const r = await h.call('POST', `/v1/incoming/association/add?${q}`, { auth: admin });
    expect([r.status, r.text]).toEqual([200, expect.anything()]);
  }
  return { login: id, password: `${id}-Pass-1` };
}

const login = (login: string, password: string | null, address = '192.0.2.1') =>
  portalLogin(h.ports, { login, password, address, protocol: 'https' });

/** The reason of the DEA line a refusal wrote, or the identity of a login. */
async function outcome(attempt: Promise<unknown>) {
  const before = h.events.length;
  try {
    return { in: await attempt };
  } catch (e) {
    expect(e).toBeInstanceOf(PortalLoginRefused);
    expect((e as Error).message).toBe('Login failed');
    const lines = h.events.slice(before).filter((l) => l.startsWith('DEA;'));
    expect(lines).toHaveLength(1);
    return { refused: /;Message=([^;]*);/.exec(lines[0]!)![1], overLimit: (e as PortalLoginRefused).overLimit };
  }
}

describe('the portal login check', () => {
  it('lets a standard-login user in with its password, and records when and from where', async () => {
    const { login: id, password } = await user('std');
    const identity = await login(id, password, '203.0.113.7');
    expect(identity).toMatchObject({
      userId: 'std',
      mode: 'standard-login',
      destinations: ['PORTAL_A'],
      permissions: ['dir', 'get', 'mtime', 'size'],
    });
    const [row] = await h.db.select().from(incomingUsers).where(eq(incomingUsers.id, 'std'));
    expect(row!.lastLoginAddress).toBe('203.0.113.7');
    const listed = await h.call('GET', '/v1/incoming/user/list', { auth: admin });
    const std = listed.json.userList.find((u: { id: string }) => u.id === 'std');
    expect(std.lastLoginDate).toBe(row!.lastLoginDate!.getTime());
  });

  it('refuses with Login failed and writes the reason to a DEA line', async () => {
    await user('inactive');
    await user('inactive', { active: 'false' }, false);
    await user('lonely', {}, false);
    await user('ss', { portalService: 'self-service' });
    await user('noperm');
    await h.ports.repos.portal.revoke('noperm', ['dir', 'get', 'mtime', 'size']);
    await user('limited');
    await h.ports.repos.portal.setOption('limited', 'portal.maxConnections', '0');
    await user('quota');
    await h.ports.repos.portal.setOption('quota', 'portal.maxDownloadBytes', '100');
    const minute = new Date(Math.floor(h.ports.clock().getTime() / 60_000) * 60_000);
    await h.ports.repos.portal.addTraffic('quota', minute, 'https', {
      downloadBytes: 100,
      uploadBytes: 0,
      downloads: 1,
      uploads: 0,
    });
    await user('nohttps');
    await h.ports.repos.portal.setOption('nohttps', 'portal.excludeProtocols', 'sftp, HTTPS');

    expect(await outcome(login('nobody', 'x'))).toEqual({ refused: 'Not found', overLimit: false });
    expect(await outcome(login('inactive', 'inactive-Pass-1'))).toEqual({ refused: 'Disabled', overLimit: false });
    expect(await outcome(login('std', 'wrong'))).toEqual({
      refused: 'Password authentication failed',
      overLimit: false,
    });
    // A self-service user's own password never opens it.
    expect(await outcome(login('ss', 'ss-Pass-1'))).toEqual({
      refused: 'Subscriber password authentication failed',
      overLimit: false,
    });
    expect(await outcome(login('nohttps', 'nohttps-Pass-1'))).toEqual({
      refused: 'Protocol https not allowed',
      overLimit: false,
    });
    expect(await outcome(login('limited', 'limited-Pass-1'))).toEqual({
      refused: 'Maximum number of connections exceeded (0)',
      overLimit: true,
    });
    expect(await outcome(login('quota', 'quota-Pass-1'))).toEqual({
      refused: 'Download quota exceeded',
      overLimit: true,
    });
    expect(await outcome(login('lonely', 'lonely-Pass-1'))).toEqual({
      refused: 'No associated Destinations',
      overLimit: false,
    });
    expect(await outcome(login('noperm', 'noperm-Pass-1'))).toEqual({
      refused: 'No associated Permissions',
      overLimit: false,
    });
  });

  it("opens a self-service user with an active subscriber's password only", async () => {
    await user('selfs', { portalService: 'self-service' });
    const repo = h.ports.repos.portal;
    const at = h.ports.clock();
    const base = { userId: 'selfs', name: 'S', iso: 'gb', tokenExpiresAt: new Date(at.getTime() + 60_000) };
    const active = (await repo.addSubscriber({ ...base, email: 'a@example.org', tokenHash: 'ta' }, at))!;
    const revoked = (await repo.addSubscriber({ ...base, email: 'b@example.org', tokenHash: 'tb' }, at))!;
    await repo.changeSubscriber(active, ['unverified'], { status: 'active', at, passwordHash: sha256Base64('Sub-A') });
    await repo.changeSubscriber(revoked, ['unverified'], { status: 'active', at, passwordHash: sha256Base64('Sub-B') });
    await repo.changeSubscriber(revoked, ['active'], { status: 'revoked', at });
    expect((await outcome(login('selfs', 'Sub-A'))).in).toMatchObject({ userId: 'selfs', subscriberId: active });
    expect(await outcome(login('selfs', 'Sub-B'))).toEqual({
      refused: 'Subscriber password authentication failed',
      overLimit: false,
    });
  });

  it('lets anyone into an open-access user, and admits a session again with the user as it is now', async () => {
    await user('open', { portalService: 'open-access' });
    expect((await outcome(login('open', null))).in).toMatchObject({ userId: 'open', mode: 'open-access' });
    expect(await outcome(login('std', null))).toEqual({ refused: 'Password authentication failed', overLimit: false });
    const std = (await h.ports.repos.incomingUsers.find('std'))!;
    await h.call('POST', '/v1/incoming/user/add?id=std&email=std@example.org&iso=gb&pass=std-Pass-1&active=false', {
      auth: admin,
    });
    const now = (await h.ports.repos.incomingUsers.find('std'))!;
    expect(now.active).toBe(false);
    expect(
      (await outcome(admit(h.ports, std, null, { login: 'std', address: 'a', protocol: 'https' }))).in,
    ).toBeTruthy();
    expect(await outcome(admit(h.ports, now, null, { login: 'std', address: 'a', protocol: 'https' }))).toEqual({
      refused: 'Disabled',
      overLimit: false,
    });
  });
});

let addresses = 0;
failedAuthScenarios('portal login', () => ({
  async account(scenario) {
    const { login: username, password: secret } = await user(`p_${scenario.replace(/[^A-Za-z0-9_]/g, '_')}`);
    return { username, secret };
  },
  freshAddress: () => `198.51.${Math.floor(++addresses / 250)}.${addresses % 250}`,
  async attempt(username, secret, address): Promise<Answer> {
    try {
      await login(username, secret, address);
      return { outcome: 'in' };
    } catch (e) {
      if (e instanceof PortalLoginRefused) return { outcome: 'wrong' };
      if (isServiceError(e) && e.kind === 'throttled') {
        expect(e.message).toBe('Login failed');
        return { outcome: 'throttled', retryAfter: e.retryAfterSeconds! };
      }
      throw e;
    }
  },
}));
