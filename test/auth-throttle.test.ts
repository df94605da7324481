import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_THROTTLE_DEFAULTS, createAuthThrottle } from '../core/api-clients/auth-throttle.ts';
import type { AuthThrottle } from '../core/api-clients/ports.ts';
import { constantTimeEqual, tokenMatches } from '../core/common/crypto.ts';
import { basic, createHarness, type Harness } from './support/harness.ts';

const WINDOW_MS = 60_000;
const bytes = (...values: number[]) => new Uint8Array(values);

describe('createAuthThrottle', () => {
  const limits = (maxPerUsername: number, maxPerAddress: number, maxPerUsernameAddress = maxPerUsername) =>
    createAuthThrottle({ windowMs: WINDOW_MS, maxPerUsername, maxPerUsernameAddress, maxPerAddress });
  // Seconds the username waits (refused even with the right secret).
  const own = (t: AuthThrottle, username: string, address: string | undefined, now: number) =>
    t.retryAfter(username, address, now).username;
  // Seconds the address waits (only wrong credentials from it are refused).
  const fromAddress = (t: AuthThrottle, username: string, address: string | undefined, now: number) =>
    t.retryAfter(username, address, now).address;

  it('refuses a username after its limit of failures until they leave the window', () => {
    const t = limits(3, 100);
    for (let i = 0; i < 3; i++) {
      expect(t.retryAfter('alice', '10.0.0.1', 1000 * i)).toEqual({ username: 0, address: 0 });
      t.fail('alice', `10.0.0.${i + 1}`, 1000 * i);
    }
    // The oldest failure (at 0) leaves the window at 60 s.
    expect(own(t, 'alice', '10.0.0.9', 2000)).toBe(58);
    expect(own(t, 'ALICE', '10.0.0.3', 30_000)).toBe(30);
    expect(t.retryAfter('bob', '10.0.0.1', 2000)).toEqual({ username: 0, address: 0 });
    expect(own(t, 'alice', '10.0.0.1', 60_000)).toBe(0);
  });

  it('refuses a username at one address before its own limit, leaving it free elsewhere', () => {
    const t = limits(4, 100, 2);
    t.fail('alice', '10.0.0.1', 0);
    t.fail('Alice', '10.0.0.1', 1000);
    expect(own(t, 'alice', '10.0.0.1', 2000)).toBe(58);
    expect(own(t, 'alice', '10.0.0.2', 2000)).toBe(0);
    expect(own(t, 'bob', '10.0.0.1', 2000)).toBe(0);
    // Refused at that address, the username is not asked again from it: its own count stays below 4.
    t.fail('alice', '10.0.0.2', 3000);
    expect(own(t, 'alice', '10.0.0.3', 3000)).toBe(0);
  });

  it('holds back an address after its limit, whatever the username, without refusing any username', () => {
    const t = limits(100, 4);
    for (let i = 0; i < 4; i++) t.fail(`user${i}`, '10.0.0.9', 0);
    expect(t.retryAfter('fresh', '10.0.0.9', 1)).toEqual({ username: 0, address: 60 });
    expect(t.retryAfter('user0', '10.0.0.9', 1)).toEqual({ username: 0, address: 60 });
    expect(fromAddress(t, 'fresh', '10.0.0.8', 1)).toBe(0);
    expect(fromAddress(t, 'fresh', '10.0.0.9', WINDOW_MS)).toBe(0);
  });

  it('does not push out the wait of an address or username already at its limit', () => {
    const t = limits(3, 2, 3);
    t.fail('a', '10.0.0.9', 0);
    t.fail('b', '10.0.0.9', 0);
    // Wrong secrets still checked while the address is held back count for their username only.
    t.fail('c', '10.0.0.9', 30_000);
    t.fail('c', '10.0.0.9', 30_000);
    expect(fromAddress(t, 'c', '10.0.0.9', 30_000)).toBe(30);
    t.fail('c', '10.0.0.9', 31_000);
    expect(t.retryAfter('c', '10.0.0.9', 31_000)).toEqual({ username: 59, address: 29 });
    t.fail('c', '10.0.0.9', 40_000);
    expect(own(t, 'c', '10.0.0.9', 40_000)).toBe(50);
  });

  it('counts failures of an unknown address by username only', () => {
    const t = limits(100, 2, 2);
    for (let i = 0; i < 5; i++) t.fail(`user${i}`, 'unknown', 0);
    for (let i = 0; i < 5; i++) t.fail(`other${i}`, undefined, 0);
    for (let i = 0; i < 3; i++) t.fail('same', 'unknown', 0);
    expect(t.retryAfter('fresh', 'unknown', 1)).toEqual({ username: 0, address: 0 });
    expect(t.retryAfter('fresh', undefined, 1)).toEqual({ username: 0, address: 0 });
    expect(own(t, 'same', 'unknown', 1)).toBe(0);
  });

  it('slides: only failures within the window count', () => {
    const t = limits(2, 100);
    t.fail('alice', 'a', 0);
    t.fail('alice', 'a', 50_000);
    expect(own(t, 'alice', 'a', 50_001)).toBe(10);
    expect(own(t, 'alice', 'a', 60_000)).toBe(0);
    t.fail('alice', 'a', 60_000);
    // 50 s and 60 s are in the window now: refused until 110 s.
    expect(own(t, 'alice', 'a', 60_000)).toBe(50);
  });

  it('forgets the least recently failed keys beyond its size', () => {
    const t = createAuthThrottle({ windowMs: WINDOW_MS, maxPerUsername: 1, maxPerAddress: 1000, maxKeys: 3 });
    t.fail('first', undefined, 0);
    t.fail('second', undefined, 0);
    t.fail('third', undefined, 0);
    t.fail('first', undefined, 1);
    t.fail('fourth', undefined, 1);
    expect(own(t, 'second', undefined, 2)).toBe(0);
    for (const kept of ['first', 'third', 'fourth']) expect(own(t, kept, undefined, 2)).toBeGreaterThan(0);
  });

  it('does not count asking as failing when choosing the key to forget', () => {
    const t = createAuthThrottle({ windowMs: WINDOW_MS, maxPerUsername: 1, maxPerAddress: 1000, maxKeys: 2 });
    t.fail('first', undefined, 0);
    t.fail('second', undefined, 0);
    expect(own(t, 'first', undefined, 1)).toBeGreaterThan(0);
    t.fail('third', undefined, 1);
    expect(own(t, 'first', undefined, 2)).toBe(0);
    expect(own(t, 'second', undefined, 2)).toBeGreaterThan(0);
  });

  it('has defaults a working pipeline never reaches', () => {
    expect(AUTH_THROTTLE_DEFAULTS).toMatchObject({
      windowMs: 300_000,
      maxPerUsername: 10,
      maxPerUsernameAddress: 5,
      maxPerAddress: 50,
    });
  });
});

describe('failed-authentication limit over the API', () => {
  let h: Harness;
  let now = Date.parse('2026-01-01T00:00:00Z');
  let reader: { auth: string; secret: string };
  let other: string;
  beforeAll(async () => {
    h = await createHarness({
      authThrottle: { windowMs: WINDOW_MS, maxPerUsername: 3, maxPerUsernameAddress: 2, maxPerAddress: 5 },
    });
    // The clock of the app's ports, moved by the tests instead of waiting.
    h.ports.clock = () => new Date(now);
    const { create } = await import('../core/api-clients/clients.ts');
    const { secret } = await create(h.ports, 'test', {
      username: 'reader',
      permissions: ['incomingUserList'],
      origin: 'cli',
    });
    reader = { auth: basic('reader', secret), secret };
    other = await h.client('other', ['incomingUserList']);
  });
  afterAll(() => h.close());

  const list = (auth: string, address: string) =>
    h.call('GET', '/v1/incoming/user/list', { auth, headers: { 'x-test-address': address } });

  it('answers 429 with Retry-After after repeated wrong secrets of a username, until the window passes', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await list(basic('reader', `guess-${i}`), `10.1.0.${i}`);
      expect(r.status).toBe(500);
      expect(r.json).toEqual({ status: 'error', message: 'User not authorized' });
    }
    // Now refused even with the right secret, from any address.
    const refused = await list(reader.auth, '10.1.0.99');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(refused.text).toBe('Too many failed authentications; try again later');
    expect(refused.headers.get('retry-after')).toBe('60');

    now += 45_000;
    expect((await list(reader.auth, '10.1.0.99')).headers.get('retry-after')).toBe('15');
    // Another username from the same addresses is not affected.
    expect((await list(basic('other', 'wrong'), '10.1.0.1')).status).toBe(500);

    now += 15_000;
    expect((await list(reader.auth, '10.1.0.99')).status).toBe(200);
  });

  it('refuses a username at the address where its secret kept failing, and nowhere else', async () => {
    now += WINDOW_MS;
    for (let i = 0; i < 2; i++) expect((await list(basic('reader', 'stale'), '10.6.0.1')).status).toBe(500);
    const refused = await list(reader.auth, '10.6.0.1');
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([429, '60']);
    // The same client on another host, and another client on the same host, keep working.
    expect((await list(reader.auth, '10.6.0.2')).status).toBe(200);
    expect((await list(other, '10.6.0.1')).status).toBe(200);
    now += WINDOW_MS;
    expect((await list(reader.auth, '10.6.0.1')).status).toBe(200);
  });

  it('after repeated failures from an address, holds back its wrong credentials but not a right secret', async () => {
    now += WINDOW_MS;
    for (let i = 0; i < 5; i++) expect((await list(basic(`ghost${i}`, 'x'), '10.2.0.1')).status).toBe(500);
    // Another job behind the same NAT or pipeline host, with its right secret, keeps working.
    for (const auth of [reader.auth, other]) expect((await list(auth, '10.2.0.1')).status).toBe(200);
    // Wrong credentials from it wait, for an unknown username as for a known one.
    for (const auth of [basic('ghost9', 'x'), basic('other', 'wrong')]) {
      const refused = await list(auth, '10.2.0.1');
      expect([refused.status, refused.text]).toEqual([429, 'Too many failed authentications; try again later']);
      expect(refused.headers.get('retry-after')).toBe('60');
    }
    expect((await list(basic('ghost9', 'x'), '10.2.0.2')).status).toBe(500);
    now += WINDOW_MS;
    expect((await list(basic('ghost9', 'x'), '10.2.0.1')).status).toBe(500);
  });

  it('still counts wrong secrets answered 429 for their address, so guessing stays limited', async () => {
    now += WINDOW_MS;
    for (let i = 0; i < 5; i++) expect((await list(basic(`ghost${i}`, 'x'), '10.5.0.1')).status).toBe(500);
    for (let i = 0; i < 2; i++) expect((await list(basic('other', `guess-${i}`), '10.5.0.1')).status).toBe(429);
    // Two wrong secrets of `other` from there: its own limit at that address, right secret or not.
    expect((await list(other, '10.5.0.1')).status).toBe(429);
    expect((await list(other, '10.5.0.2')).status).toBe(200);
    now += WINDOW_MS;
  });

  it('does not count successes, nor a right secret without the permission', async () => {
    now += WINDOW_MS;
    for (let i = 0; i < 20; i++) expect((await list(reader.auth, '10.3.0.1')).status).toBe(200);
    for (let i = 0; i < 20; i++) {
      const r = await h.call('GET', '/v1/web/user/list', {
        auth: reader.auth,
        headers: { 'x-test-address': '10.3.0.1' },
      });
      expect(r.status).toBe(500);
    }
    expect((await list(reader.auth, '10.3.0.1')).status).toBe(200);
    // Successes between failures do not wipe them either.
    await list(basic('reader', 'wrong'), '10.3.0.2');
    await list(reader.auth, '10.3.0.2');
    await list(basic('reader', 'wrong'), '10.3.0.2');
    await list(reader.auth, '10.3.0.2');
    await list(basic('reader', 'wrong'), '10.3.0.2');
    expect((await list(reader.auth, '10.3.0.2')).status).toBe(429);
  });

  it('keeps the earlier answers first: 401 for no credentials, 412 and 400 for parameters', async () => {
    // `reader` is refused at this point (previous test).
    expect((await h.call('GET', '/v1/incoming/user/list', { headers: { 'x-test-address': '10.3.0.2' } })).status).toBe(
      401,
    );
    const missing = await h.call('GET', '/v1/incoming/association/list', {
      auth: reader.auth,
      headers: { 'x-test-address': '10.3.0.2' },
    });
    expect(missing.status).toBe(412);
    expect((await h.call('GET', '/v1/version', { headers: { 'x-test-address': '10.3.0.2' } })).status).toBe(200);
  });

  it('counts a username holding U+0000 as an unknown client, not a database error', async () => {
    const r = await list(basic('re\u0000ader', reader.secret), '10.4.0.1');
    expect(r.status).toBe(500);
    expect(r.json).toEqual({ status: 'error', message: 'User not authorized' });
  });

  it('never logs the presented secrets', () => {
    const log = h.logLines.join('\n');
    expect(log).not.toContain(reader.secret);
    expect(log).not.toContain('guess-0');
  });
});

describe('constantTimeEqual', () => {
  it('is true for equal bytes, including empty ones', () => {
    expect(constantTimeEqual(bytes(1, 2, 3), bytes(1, 2, 3))).toBe(true);
    expect(constantTimeEqual(bytes(), bytes())).toBe(true);
  });

  it('is false for any difference, wherever it is', () => {
    expect(constantTimeEqual(bytes(1, 2, 3), bytes(0, 2, 3))).toBe(false);
    expect(constantTimeEqual(bytes(1, 2, 3), bytes(1, 2, 4))).toBe(false);
    expect(constantTimeEqual(bytes(255), bytes(127))).toBe(false);
  });

  it('is false for different lengths, also when one is a prefix or padded with zeros', () => {
    expect(constantTimeEqual(bytes(1, 2), bytes(1, 2, 3))).toBe(false);
    expect(constantTimeEqual(bytes(1, 2, 3), bytes(1, 2))).toBe(false);
    expect(constantTimeEqual(bytes(1, 2), bytes(1, 2, 0))).toBe(false);
    expect(constantTimeEqual(bytes(), bytes(0))).toBe(false);
  });

  it('reads every byte instead of stopping at the first difference', () => {
    // Counts element reads: an early-exit comparison would read far fewer for a first-byte mismatch.
    const reads = { n: 0 };
    const counting = (data: Uint8Array) =>
      new Proxy(data, {
        get: (target, key) => (typeof key === 'string' && /^\d+$/.test(key) && reads.n++, Reflect.get(target, key)),
      });
    constantTimeEqual(counting(bytes(9, 2, 3, 4, 5, 6, 7, 8)), counting(bytes(1, 2, 3, 4, 5, 6, 7, 8)));
    const firstDiffers = reads.n;
    reads.n = 0;
    constantTimeEqual(counting(bytes(1, 2, 3, 4, 5, 6, 7, 8)), counting(bytes(1, 2, 3, 4, 5, 6, 7, 8)));
    expect(firstDiffers).toBe(16);
    expect(reads.n).toBe(16);
  });
});

describe('tokenMatches (console CSRF tokens)', () => {
  it('accepts only the same string, and refuses form values that are not a string', () => {
    expect(tokenMatches('a-token_1', 'a-token_1')).toBe(true);
    expect(tokenMatches('a-token_2', 'a-token_1')).toBe(false);
    expect(tokenMatches('a-token', 'a-token_1')).toBe(false);
    expect(tokenMatches('', 'a-token_1')).toBe(false);
    expect(tokenMatches('é', 'é')).toBe(true);
    for (const other of [undefined, null, ['a-token_1'], new Blob(['a-token_1'])])
      expect(tokenMatches(other, 'a-token_1')).toBe(false);
  });
});
