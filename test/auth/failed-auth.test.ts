import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLimited, delayOfWrongAnswer, FAILED_AUTH_RULES } from '../../core/api-clients/auth-throttle.ts';
import { create } from '../../core/api-clients/clients.ts';
import { memoryFailureLog } from '../../core/api-clients/memory-failure-log.ts';
import type { FailedAuthLimits } from '../../core/api-clients/ports.ts';
import { constantTimeEqual, tokenMatches } from '../../core/common/crypto.ts';
import { isServiceError } from '../../core/common/errors.ts';
import { type Answer, failedAuthScenarios } from '../support/failed-auth-scenarios.ts';
import { basic, createHarness, type Harness } from '../support/harness.ts';

const bytes = (...values: number[]) => new Uint8Array(values);
const WINDOW_MS = FAILED_AUTH_RULES.windowMs;

describe('checkLimited (the rules, on a log in memory)', () => {
  const setup = () => {
    const slept: number[] = [];
    const limits: FailedAuthLimits = {
      rules: FAILED_AUTH_RULES,
      apiLog: memoryFailureLog(),
      sleep: async (ms) => void slept.push(ms),
    };
    const attempt = async (username: string, right: boolean, address: string | undefined, now: number) => {
      try {
        const granted = await checkLimited(
          limits,
          limits.apiLog,
          { username, address, now, tooMany: 'busy' },
          async () => (right ? username : null),
        );
        return granted === null ? 'wrong' : 'in';
      } catch (e) {
        if (isServiceError(e) && e.kind === 'throttled') return `429:${e.retryAfterSeconds}`;
        throw e;
      }
    };
    return { slept, attempt };
  };

  it('refuses a pair at its 20th failure until the oldest leaves the window, then lets it in', async () => {
    const { attempt } = setup();
    for (let i = 0; i < 20; i++) expect(await attempt('alice', false, '10.0.0.1', i * 1000)).toBe('wrong');
    expect(await attempt('alice', true, '10.0.0.1', 20_000)).toBe('429:280');
    expect(await attempt('ALICE', false, '10.0.0.1', 150_000)).toBe('429:150');
    expect(await attempt('alice', true, '10.0.0.2', 20_000)).toBe('in');
    expect(await attempt('bob', true, '10.0.0.1', 20_000)).toBe('in');
    // The first failure (at 0 s) leaves the window at 300 s: 19 are left, below the limit.
    expect(await attempt('alice', true, '10.0.0.1', WINDOW_MS)).toBe('in');
  });

  it('slows wrong answers of a username failing from many addresses, never a right one', async () => {
    const { attempt, slept } = setup();
    for (let i = 0; i < 60; i++) expect(await attempt('carol', false, `10.1.0.${i % 12}`, i)).toBe('wrong');
    // No delay up to 20 failures, then 100 ms more each, at most 2 s.
    expect(slept).toEqual([...Array.from({ length: 20 }, (_, i) => (i + 1) * 100), ...Array(20).fill(2000)]);
    slept.length = 0;
    expect(await attempt('carol', true, '10.1.0.99', 100)).toBe('in');
    expect(await attempt('carol', true, '10.1.0.1', 100)).toBe('in');
    expect(slept).toEqual([]);
    expect(await attempt('dave', false, '10.1.0.1', 100)).toBe('wrong');
    expect(slept).toEqual([]);
  });

  it('holds back wrong credentials of an address with 50 failures, without counting them there again', async () => {
    const { attempt } = setup();
    for (let i = 0; i < 50; i++) expect(await attempt(`ghost${i}`, false, '10.2.0.1', i * 1000)).toBe('wrong');
    expect(await attempt('ghost-x', false, '10.2.0.1', 100_000)).toBe('429:200');
    expect(await attempt('erin', true, '10.2.0.1', 100_000)).toBe('in');
    // Still refused by its first 50 failures only: the wait told does not move.
    expect(await attempt('ghost-y', false, '10.2.0.1', 200_000)).toBe('429:100');
    expect(await attempt('ghost-y', false, '10.2.0.2', 200_000)).toBe('wrong');
    expect(await attempt('ghost-z', false, '10.2.0.1', WINDOW_MS + 1000)).toBe('wrong');
  });

  it('counts wrong secrets answered 429 for their address towards their pair', async () => {
    const { attempt } = setup();
    for (let i = 0; i < 50; i++) await attempt(`ghost${i}`, false, '10.3.0.1', 0);
    for (let i = 0; i < 20; i++) expect(await attempt('frank', false, '10.3.0.1', 1)).toBe('429:300');
    expect(await attempt('frank', true, '10.3.0.1', 2)).toBe('429:300');
    expect(await attempt('frank', true, '10.3.0.2', 2)).toBe('in');
  });

  it('without a known address, only slows the username: no caller can refuse another', async () => {
    const { attempt, slept } = setup();
    for (const address of [undefined, 'unknown']) {
      for (let i = 0; i < 30; i++) expect(await attempt('grace', false, address, i)).toBe('wrong');
      expect(await attempt('grace', true, address, 100)).toBe('in');
    }
    expect(Math.max(...slept)).toBe(2000);
  });

  it('has the delays of the rules', () => {
    expect([0, 20, 21, 30, 40, 1000].map((n) => delayOfWrongAnswer(FAILED_AUTH_RULES, n))).toEqual([
      0, 0, 100, 1000, 2000, 2000,
    ]);
    expect(FAILED_AUTH_RULES).toMatchObject({ windowMs: 300_000, refusePairAt: 20, holdBackAddressAt: 50 });
  });
});

describe('memoryFailureLog', () => {
  it('keeps the newest failures of a key within the window, oldest first', async () => {
    const log = memoryFailureLog();
    for (const at of [1, 2, 3, 4]) await log.add('k', at, 0, 3);
    expect(await log.recent('k', 0, 3)).toEqual([2, 3, 4]);
    expect(await log.recent('k', 0, 2)).toEqual([3, 4]);
    expect(await log.recent('k', 3, 3)).toEqual([4]);
    expect(await log.recent('k', 4, 3)).toEqual([]);
    expect(await log.recent('other', 0, 3)).toEqual([]);
  });

  it('forgets the least recently failed keys beyond its size, asking does not make a key recent', async () => {
    const log = memoryFailureLog(2);
    await log.add('first', 1, 0, 5);
    await log.add('second', 1, 0, 5);
    expect(await log.recent('first', 0, 5)).toEqual([1]);
    await log.add('third', 2, 0, 5);
    expect(await log.recent('first', 0, 5)).toEqual([]);
    expect(await log.recent('second', 0, 5)).toEqual([1]);
  });
});

const answerOf = (status: number, retryAfter: string | null, wrongStatus: number): Answer => {
  if (status === 429) return { outcome: 'throttled', retryAfter: Number(retryAfter) };
  if (status === wrongStatus) return { outcome: 'wrong' };
  if (status >= 200 && status < 400) return { outcome: 'in' };
  throw new Error(`unexpected status ${status}`);
};

describe('the API on Node (through the app)', () => {
  let h: Harness;
  const slept: number[] = [];
  let addresses = 0;
  beforeAll(async () => {
    h = await createHarness({ failedAuth: { sleep: async (ms) => void slept.push(ms) } });
  });
  afterAll(() => h.close());

  const list = (auth: string, address: string) =>
    h.call('GET', '/v1/incoming/user/list', { auth, headers: { 'x-test-address': address } });

  failedAuthScenarios('API', () => ({
    async account(scenario) {
      const username = `api-${scenario}`;
      const { secret } = await create(h.ports, 'test', { username, permissions: ['incomingUserList'], origin: 'cli' });
      return { username, secret };
    },
    freshAddress: () => `10.9.${Math.floor(++addresses / 250)}.${addresses % 250}`,
    async attempt(username, secret, address) {
      const r = await list(basic(username, secret), address);
      if (r.status === 500) expect(r.json).toEqual({ status: 'error', message: 'User not authorized' });
      if (r.status === 429) {
        expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
        expect(r.text).toBe('Too many failed authentications; try again later');
      }
      return answerOf(r.status, r.headers.get('retry-after'), 500);
    },
  }));

  it('slowed the wrong answers of the username failing from many addresses, at most 2 s each', () => {
    expect(Math.max(...slept)).toBe(2000);
    expect(Math.min(...slept)).toBe(100);
  });

  it('does not count successes, nor a right secret without the permission', async () => {
    const reader = await h.client('reader', ['incomingUserList']);
    for (let i = 0; i < 25; i++) {
      const r = await h.call('GET', '/v1/web/user/list', { auth: reader, headers: { 'x-test-address': '10.3.0.1' } });
      expect(r.status).toBe(500);
    }
    expect((await list(reader, '10.3.0.1')).status).toBe(200);
    // Successes between failures do not wipe them either.
    for (let i = 0; i < 20; i++) {
      expect((await list(basic('reader', 'wrong'), '10.3.0.2')).status).toBe(500);
      expect((await list(reader, '10.3.0.2')).status).toBe(i < 19 ? 200 : 429);
    }
  });

  it('keeps the earlier answers first: 401 for no credentials, 412 for a missing parameter', async () => {
    // `reader` is refused at 10.3.0.2 now (previous test).
    const at = { 'x-test-address': '10.3.0.2' };
    expect((await h.call('GET', '/v1/incoming/user/list', { headers: at })).status).toBe(401);
    const reader = basic('reader', 'wrong');
    expect((await h.call('GET', '/v1/incoming/association/list', { auth: reader, headers: at })).status).toBe(412);
    expect((await h.call('GET', '/v1/version', { headers: at })).status).toBe(200);
  });

  it('counts a username holding U+0000 as an unknown client, not a database error', async () => {
    const r = await list(basic('re\u0000ader', 'x'), '10.4.0.1');
    expect(r.status).toBe(500);
    expect(r.json).toEqual({ status: 'error', message: 'User not authorized' });
  });

  it('never logs the presented secrets', () => {
    const log = h.logLines.join('\n');
    expect(log).not.toContain('wrong-0');
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
