import { afterAll, beforeAll, expect } from 'vitest';
import { type Answer, failedAuthScenarios } from '../support/failed-auth-scenarios.ts';
import { createHarness, type Harness } from '../support/harness.ts';

// The console's sign-in under the same rules as the API, through its pages; its failures are
// kept in the database. Wrong answers are not really slowed here (the delays are the rules' own).
let h: Harness;
let apiAdmin: string;
let addresses = 0;
beforeAll(async () => {
  h = await createHarness({ failedAuth: { sleep: async () => undefined } });
  apiAdmin = await h.client('api-admin', ['.*']);
});
afterAll(() => h.close());

/** One sign-in through the login page, as a browser at `address` does it: its form, then the post. */
async function signIn(username: string, password: string, address: string): Promise<Answer> {
  const at = { 'x-test-address': address };
  const page = await h.app.request('https://localhost/console/login', { headers: at });
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const cookie = page.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const r = await h.app.request('https://localhost/console/login', {
    method: 'POST',
    headers: { ...at, cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf, username, password }),
  });
  const text = await r.text();
  if (r.status === 303) return { outcome: 'in' };
  if (r.status === 401) {
    expect(text).toContain('Invalid username or password');
    return { outcome: 'wrong' };
  }
  expect([r.status, text]).toEqual([429, expect.stringContaining('Too many failed logins')]);
  return { outcome: 'throttled', retryAfter: Number(r.headers.get('retry-after')) };
}

failedAuthScenarios('console sign-in', () => ({
  async account(scenario) {
    const username = `web-${scenario}`;
    const secret = `${username}-Pass-1`;
    const query = new URLSearchParams({ id: username, pass: secret, active: 'true' });
    expect((await h.call('POST', `/v1/web/user/add?${query}`, { auth: apiAdmin })).status).toBe(200);
    return { username, secret };
  },
  freshAddress: () => `198.51.${Math.floor(++addresses / 250)}.${addresses % 250}`,
  attempt: signIn,
}));
