import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isServiceError } from '../../core/common/errors.ts';
import { type PortalIdentity, PortalLoginRefused, portalLogin } from '../../core/portal/access.ts';
import { grantPermissions, setOption } from '../../core/portal/admin.ts';
import { PortalLoginMemory, REMEMBER_PORTAL_LOGIN_MS } from '../../core/portal/login-memory.ts';
import type { Ports } from '../../core/ports.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * A successful portal login is remembered for a moment (core/portal/login-memory.ts): the same
 * credentials then skip the check, a wrong password never does, and the failed-authentication rules
 * still judge every wrong one.
 */

const presented = { login: 'alice', password: 'Secret-1', address: '192.0.2.1', protocol: 'https' };
const identityOf = (userId: string) => ({ userId }) as PortalIdentity;

describe('PortalLoginMemory', () => {
  const key = new Uint8Array(32).fill(3);

  it('recalls a success for the same login, password, address and protocol, until its time is up', async () => {
    const memory = new PortalLoginMemory(key);
    expect(memory.recall(presented, 1000)).toBeNull();
    await memory.check(presented, 1000, async () => identityOf('alice'));
    expect(memory.recall(presented, 1000)).toEqual(identityOf('alice'));
    expect(memory.recall(presented, 1000 + REMEMBER_PORTAL_LOGIN_MS - 1)).toEqual(identityOf('alice'));
    expect(memory.recall(presented, 1000 + REMEMBER_PORTAL_LOGIN_MS)).toBeNull();
    for (const other of [
      { password: 'Secret-2' },
      { password: 'secret-1' },
      { address: '192.0.2.2' },
      { protocol: 'sftp' },
      { login: 'ALICE' },
    ]) {
      expect(memory.recall({ ...presented, ...other }, 1001)).toBeNull();
    }
  });

  it('remembers no refusal, and keeps no password', async () => {
    const memory = new PortalLoginMemory(key);
    const refusal = new PortalLoginRefused(false);
    await expect(memory.check(presented, 1000, () => Promise.reject(refusal))).rejects.toBe(refusal);
    expect(memory.recall(presented, 1000)).toBeNull();
    await memory.check(presented, 1000, async () => identityOf('alice'));
    expect(JSON.stringify(Object.values(memory))).not.toContain(presented.password);
  });

  it("forgets a user's successes when one of its logins fails, whatever the case of its name", async () => {
    const memory = new PortalLoginMemory(key);
    const elsewhere = { ...presented, address: '198.51.100.9' };
    await memory.check(presented, 1000, async () => identityOf('alice'));
    await memory.check(elsewhere, 1000, async () => identityOf('alice'));
    await memory.check({ ...presented, login: 'bob' }, 1000, async () => identityOf('bob'));
    memory.failed('Alice');
    expect(memory.recall(presented, 1001)).toBeNull();
    expect(memory.recall(elsewhere, 1001)).toBeNull();
    expect(memory.recall({ ...presented, login: 'bob' }, 1001)).toEqual(identityOf('bob'));
  });

  it('remembers nothing of a check during which a login failed', async () => {
    const memory = new PortalLoginMemory(key);
    let letIn: (identity: PortalIdentity) => void = () => {};
    const checking = memory.check(presented, 1000, () => new Promise((resolve) => (letIn = resolve)));
    memory.failed('alice');
    letIn(identityOf('alice'));
    expect(await checking).toEqual(identityOf('alice'));
    expect(memory.recall(presented, 1001)).toBeNull();
  });

  it('gives a check under way to the same credentials only, and null to them when it refuses', async () => {
    const memory = new PortalLoginMemory(key);
    let answer: { resolve(i: PortalIdentity): void; reject(e: unknown): void } = { resolve() {}, reject() {} };
    const checking = memory.check(
      presented,
      1000,
      () => new Promise((resolve, reject) => (answer = { resolve, reject })),
    );
    const joined = memory.underWay(presented);
    expect(memory.underWay({ ...presented, password: 'Secret-2' })).toBeNull();
    answer.reject(new PortalLoginRefused(false));
    await expect(checking).rejects.toBeInstanceOf(PortalLoginRefused);
    expect(await joined).toBeNull();
    expect(memory.underWay(presented)).toBeNull();
  });
});

describe('the portal login with its memory', () => {
  let h: Harness;
  let admin: string;
  /** The ports' clock, moved forward by the tests instead of waiting. */
  let skew = 0;
  let decrypts = 0;
  let ports: Ports;
  let addresses = 0;
  const freshAddress = () => `203.0.113.${++addresses}`;

  beforeAll(async () => {
    h = await createHarness({ failedAuth: { sleep: async () => undefined } });
    admin = await h.client('admin', ['.*']);
    await h.addDestination('MEMORY_A');
    const secrets = Object.create(h.ports.secrets) as Ports['secrets'];
    secrets.decrypt = (sealed) => {
      decrypts++;
      return h.ports.secrets.decrypt(sealed);
    };
    ports = { ...h.ports, secrets, clock: () => new Date(Date.now() + skew) };
  });
  afterAll(() => h.close());

  /** Adds the user with its destination, or changes its password and whether it is active. */
  async function user(id: string, password: string, active = true, associate = true) {
    const query = new URLSearchParams({
      id,
      email: `${id}@example.org`,
      iso: 'gb',
      pass: password,
      active: `${active}`,
    });
    expect((await h.call('POST', `/v1/incoming/user/add?${query}`, { auth: admin })).status).toBe(200);
    if (!associate) return;
    const q = new URLSearchParams({ id, destination: 'MEMORY_A' });
    expect((await h.call('POST', `/v1/incoming/association/add?${q}`, { auth: admin })).status).toBe(200);
  }

  /** Let in, refused with its DEA line's reason, or 429. */
  async function attempt(login: string, password: string, address: string, protocol = 'https') {
    const before = h.events.length;
    try {
      const identity = await portalLogin(ports, { login, password, address, protocol });
      return { in: identity.userId };
    } catch (e) {
      if (isServiceError(e) && e.kind === 'throttled') return { throttled: true };
      expect(e).toBeInstanceOf(PortalLoginRefused);
      const line = h.events.slice(before).find((l) => l.startsWith('DEA;'))!;
      return { refused: /;Message=([^;]*);/.exec(line)![1] };
    }
  }

  const failuresOf = async (login: string) =>
    (await h.ports.repos.console.signInFailures.recent(`portal:user:${login}`, 0, 1000)).length;
  const lapse = () => {
    skew += REMEMBER_PORTAL_LOGIN_MS;
  };

  it('lets the same credentials in again within its time without checking them, then checks them again', async () => {
    await user('mem_reuse', 'Reuse-1');
    const address = freshAddress();
    expect(await attempt('mem_reuse', 'Reuse-1', address)).toEqual({ in: 'mem_reuse' });
    const checked = decrypts;
    expect(await attempt('mem_reuse', 'Reuse-1', address)).toEqual({ in: 'mem_reuse' });
    expect(decrypts).toBe(checked);
    lapse();
    expect(await attempt('mem_reuse', 'Reuse-1', address)).toEqual({ in: 'mem_reuse' });
    expect(decrypts).toBe(checked + 1);
  });

  it('checks once for many logins with the same credentials at once', async () => {
    await user('mem_many', 'Many-1');
    const address = freshAddress();
    const checked = decrypts;
    const answers = await Promise.all(Array.from({ length: 20 }, () => attempt('mem_many', 'Many-1', address)));
    expect(answers).toEqual(Array.from({ length: 20 }, () => ({ in: 'mem_many' })));
    expect(decrypts).toBe(checked + 1);
  });

  it('never lets a wrong password in, and counts each one, also many at once after a success', async () => {
    await user('mem_wrong', 'Wrong-1');
    const address = freshAddress();
    expect(await attempt('mem_wrong', 'Wrong-1', address)).toEqual({ in: 'mem_wrong' });
    expect(await attempt('mem_wrong', 'wrong-1', address)).toEqual({ refused: 'Password authentication failed' });
    expect(await failuresOf('mem_wrong')).toBe(1);
    const wrong = await Promise.all(Array.from({ length: 5 }, () => attempt('mem_wrong', 'Wrong-2', address)));
    expect(wrong).toEqual(Array.from({ length: 5 }, () => ({ refused: 'Password authentication failed' })));
    expect(await failuresOf('mem_wrong')).toBe(6);
    // The right one is checked again: the failures dropped what was remembered.
    const checked = decrypts;
    expect(await attempt('mem_wrong', 'Wrong-1', address)).toEqual({ in: 'mem_wrong' });
    expect(decrypts).toBe(checked + 1);
  });

  it('refuses a user disabled through this server at once, and one disabled elsewhere once its time is up', async () => {
    await user('mem_disabled', 'Disabled-1');
    const address = freshAddress();
    expect(await attempt('mem_disabled', 'Disabled-1', address)).toEqual({ in: 'mem_disabled' });
    await user('mem_disabled', 'Disabled-1', false, false);
    expect(await attempt('mem_disabled', 'Disabled-1', address)).toEqual({ refused: 'Disabled' });

    await user('mem_elsewhere', 'Elsewhere-1');
    expect(await attempt('mem_elsewhere', 'Elsewhere-1', address)).toEqual({ in: 'mem_elsewhere' });
    // Another server sharing the database: written there, unseen by this one's memory.
    await h.ports.repos.incomingUsers.update('mem_elsewhere', { active: false }, h.ports.clock());
    expect(await attempt('mem_elsewhere', 'Elsewhere-1', address)).toEqual({ in: 'mem_elsewhere' });
    lapse();
    expect(await attempt('mem_elsewhere', 'Elsewhere-1', address)).toEqual({ refused: 'Disabled' });
  });

  it("sees a user's new destination, permissions and options at once when they change through this server", async () => {
    await user('mem_grown', 'Grown-1');
    await h.addDestination('MEMORY_B');
    const address = freshAddress();
    expect((await attempt('mem_grown', 'Grown-1', address)).in).toBe('mem_grown');
    const login = () => portalLogin(ports, { login: 'mem_grown', password: 'Grown-1', address, protocol: 'https' });
    expect((await login()).destinations).toEqual(['MEMORY_A']);
    const q = new URLSearchParams({ id: 'mem_grown', destination: 'MEMORY_B' });
    expect((await h.call('POST', `/v1/incoming/association/add?${q}`, { auth: admin })).status).toBe(200);
    expect((await login()).destinations).toEqual(['MEMORY_A', 'MEMORY_B']);
    await grantPermissions(ports, 'test', 'mem_grown', ['put']);
    expect((await login()).permissions).toContain('put');
    await setOption(ports, 'test', 'mem_grown', 'portal.maxConnections', '3');
    expect((await login()).settings.maxConnections).toBe(3);
  });

  it('checks a new password for real, and refuses the old one once its time is up', async () => {
    await user('mem_changed', 'Old-1');
    const address = freshAddress();
    expect(await attempt('mem_changed', 'Old-1', address)).toEqual({ in: 'mem_changed' });
    await user('mem_changed', 'New-1', true, false);
    const checked = decrypts;
    expect(await attempt('mem_changed', 'New-1', address)).toEqual({ in: 'mem_changed' });
    expect(decrypts).toBe(checked + 1);
    // Another address, or protocol, is checked on its own.
    expect(await attempt('mem_changed', 'Old-1', freshAddress())).toEqual({
      refused: 'Password authentication failed',
    });
    lapse();
    expect(await attempt('mem_changed', 'Old-1', address)).toEqual({ refused: 'Password authentication failed' });
    expect(await failuresOf('mem_changed')).toBe(2);
  });

  it('refuses the right password of a pair that failed too often meanwhile, as without it', async () => {
    await user('mem_pair', 'Pair-1');
    const address = freshAddress();
    expect(await attempt('mem_pair', 'Pair-1', address)).toEqual({ in: 'mem_pair' });
    for (let i = 0; i < 20; i++) {
      expect(await attempt('mem_pair', `guess-${i}`, address)).toEqual({ refused: 'Password authentication failed' });
    }
    expect(await attempt('mem_pair', 'Pair-1', address)).toEqual({ throttled: true });
    expect(await attempt('mem_pair', 'Pair-1', freshAddress())).toEqual({ in: 'mem_pair' });
  });

  it("reads a remembered user's quotas on every login", async () => {
    await user('mem_quota', 'Quota-1');
    await h.ports.repos.portal.setOption('mem_quota', 'portal.maxDownloadBytes', '100');
    const address = freshAddress();
    expect(await attempt('mem_quota', 'Quota-1', address)).toEqual({ in: 'mem_quota' });
    const minute = new Date(Math.floor(ports.clock().getTime() / 60_000) * 60_000);
    await h.ports.repos.portal.addTraffic('mem_quota', minute, 'https', {
      downloadBytes: 100,
      uploadBytes: 0,
      downloads: 1,
      uploads: 0,
    });
    expect(await attempt('mem_quota', 'Quota-1', address)).toEqual({ refused: 'Download quota exceeded' });
  });
});
