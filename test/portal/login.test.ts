import { describe, expect, it } from 'vitest';
import { checkLogin, credentialsToCheck, type LoginFacts, portalMode } from '../../core/portal/login.ts';

const allowed: LoginFacts = {
  user: { id: 'consumer', active: true, portalService: 'standard-login' },
  userPasswordMatches: true,
  subscriberPasswordMatches: false,
  connections: 0,
  maxConnections: 10,
  uploadQuotaSpent: false,
  downloadQuotaSpent: false,
  destinations: 1,
  permissions: 4,
};
const as = (mode: string, facts: Partial<LoginFacts> = {}) =>
  checkLogin({ ...allowed, user: { ...allowed.user!, portalService: mode }, ...facts });

describe('the portal login check', () => {
  it('lets in an active standard-login user with its password', () => {
    expect(checkLogin(allowed)).toEqual({ ok: true, mode: 'standard-login' });
  });

  it("refuses for the reference's reasons, in the reference's order", () => {
    const steps: Array<[Partial<LoginFacts>, string]> = [
      [{ user: null }, 'Not found'],
      [{ user: { ...allowed.user!, active: false } }, 'Disabled'],
      [{ userPasswordMatches: false }, 'Password authentication failed'],
      [{ excludedProtocol: 'https' }, 'Protocol https not allowed'],
      [{ connections: 10 }, 'Maximum number of connections exceeded (10)'],
      [{ uploadQuotaSpent: true }, 'Upload quota exceeded'],
      [{ downloadQuotaSpent: true }, 'Download quota exceeded'],
      [{ destinations: 0 }, 'No associated Destinations'],
      [{ permissions: 0 }, 'No associated Permissions'],
    ];
    // Each failure together with every later one: the earliest reason is the one given.
    for (let i = 0; i < steps.length; i++) {
      const later = steps.slice(i).reverse();
      const facts = Object.assign({}, allowed, ...later.map(([f]) => f));
      const reason = steps[i]![1];
      // The limits pass with time: HTTP answers them 429 rather than 401.
      const overLimit = /^Maximum|quota exceeded$/.test(reason) ? { overLimit: true } : {};
      expect(checkLogin(facts), reason).toEqual({ ok: false, reason, ...overLimit });
    }
  });

  it("never takes a self-service user's own password, only an active subscriber's", () => {
    expect(as('self-service')).toEqual({ ok: false, reason: 'Subscriber password authentication failed' });
    expect(as('self-service', { userPasswordMatches: false, subscriberPasswordMatches: true })).toEqual({
      ok: true,
      mode: 'self-service',
    });
    expect(credentialsToCheck('self-service')).toBe('subscriber');
  });

  it('checks no password for open access, but still the rest', () => {
    expect(as('open-access', { userPasswordMatches: false })).toEqual({ ok: true, mode: 'open-access' });
    expect(as('open-access', { destinations: 0 })).toEqual({ ok: false, reason: 'No associated Destinations' });
  });

  it('has no connection limit below 0, and reads an unknown mode as standard-login', () => {
    expect(checkLogin({ ...allowed, maxConnections: -1, connections: 1000 }).ok).toBe(true);
    expect(portalMode('something else')).toBe('standard-login');
  });
});
