import { describe, expect, it } from 'vitest';
import { scaled } from './time.ts';

/** How one attempt was answered, whatever the shell: let in, refused as wrong, or 429. */
export type Answer = { outcome: 'in' } | { outcome: 'wrong' } | { outcome: 'throttled'; retryAfter: number };

export interface AuthTarget {
  /** A client (API) or web user (console) of its own for each scenario, with its right secret. */
  account(scenario: string): Promise<{ username: string; secret: string }>;
  /** An address no attempt came from yet. */
  freshAddress(): string;
  attempt(username: string, secret: string, address: string): Promise<Answer>;
}

const times = (n: number) => Array.from({ length: n }, (_, i) => i);

/**
 * The failed-authentication rules (wire decisions §2) with their production limits, against one
 * shell: the same scenarios for the API on Node and Workers and for the console's sign-in.
 */
export function failedAuthScenarios(name: string, target: () => AuthTarget, options: { timeoutMs?: number } = {}) {
  const outcomes = (answers: Answer[]) => answers.map((a) => a.outcome);

  describe(`${name}: failed authentications never lock out a correct client`, {
    timeout: options.timeoutMs && scaled(options.timeoutMs),
  }, () => {
    it('19 wrong secrets then the right one from the same address: let in', async () => {
      const t = target();
      const { username, secret } = await t.account('nineteen');
      const address = t.freshAddress();
      for (const i of times(19)) expect((await t.attempt(username, `wrong-${i}`, address)).outcome).toBe('wrong');
      expect(await t.attempt(username, secret, address)).toEqual({ outcome: 'in' });
    });

    it('20 wrong then the right one: 429 for that pair only, the username elsewhere and others there let in', async () => {
      const t = target();
      const { username, secret } = await t.account('twenty');
      const other = await t.account('neighbour');
      const address = t.freshAddress();
      const firstFailure = Date.now();
      for (const i of times(20)) expect((await t.attempt(username, `wrong-${i}`, address)).outcome).toBe('wrong');
      const refused = await t.attempt(username, secret, address);
      // Until the first of the 20 leaves the 5-minute window.
      const left = 300 - Math.floor((Date.now() - firstFailure) / 1000);
      expect(refused.outcome).toBe('throttled');
      expect(refused.outcome === 'throttled' && refused.retryAfter).toBeGreaterThanOrEqual(left - 1);
      expect(refused.outcome === 'throttled' && refused.retryAfter).toBeLessThanOrEqual(300);
      expect(await t.attempt(username, secret, t.freshAddress())).toEqual({ outcome: 'in' });
      expect(await t.attempt(other.username, other.secret, address)).toEqual({ outcome: 'in' });
    });

    it('100 wrong secrets of one username over 10 addresses, then the right one from a new address: let in', async () => {
      const t = target();
      const { username, secret } = await t.account('spread');
      const addresses = times(10).map(() => t.freshAddress());
      // 25 at a time: each wrong answer may be slowed, and they need not wait in turn; more at once
      // would open more database connections than a test server allows.
      const answers: Answer[] = [];
      for (const wave of times(4)) {
        const attempts = times(25).map((i) => wave * 25 + i);
        answers.push(
          ...(await Promise.all(attempts.map((i) => t.attempt(username, `guess-${i}`, addresses[i % 10]!)))),
        );
      }
      expect(new Set(outcomes(answers))).toEqual(new Set(['wrong']));
      expect(await t.attempt(username, secret, t.freshAddress())).toEqual({ outcome: 'in' });
      expect(await t.attempt(username, secret, addresses[0]!)).toEqual({ outcome: 'in' });
    });

    it('60 wrong from one address over many usernames, then a right one from it: let in', async () => {
      const t = target();
      const { username, secret } = await t.account('shared-host');
      const address = t.freshAddress();
      const answers: Answer[] = [];
      for (const i of times(60)) answers.push(await t.attempt(`ghost-${name}-${i}`, 'x', address));
      // The address's wrong credentials are held back from its 51st failure on, known usernames' too.
      expect(outcomes(answers)).toEqual([...times(50).map(() => 'wrong'), ...times(10).map(() => 'throttled')]);
      expect((await t.attempt(username, 'wrong', address)).outcome).toBe('throttled');
      expect(await t.attempt(username, secret, address)).toEqual({ outcome: 'in' });
      expect((await t.attempt('ghost-elsewhere', 'x', t.freshAddress())).outcome).toBe('wrong');
    });
  });
}
