import { expect } from 'vitest';
import { isServiceError } from '../../core/common/errors.ts';
import { login } from '../../core/console/sign-in.ts';
import { type Answer, failedAuthScenarios } from '../support/failed-auth-scenarios.ts';
import { call, client, withPorts } from './support.ts';

// Console sign-in under the same rules on the Worker's own ports (its failures in the database
// through Hyperdrive, its wrong answers really slowed). Each sign-in runs the password's scrypt,
// so the scenarios get more time than the suite's default.
const stamp = Date.now().toString(36);
let addresses = 0;
let admin: string | undefined;

async function signIn(username: string, password: string, address: string): Promise<Answer> {
  try {
    await withPorts((ports) => login(ports, { username, password, address }));
    return { outcome: 'in' };
  } catch (e) {
    if (isServiceError(e) && e.kind === 'throttled') return { outcome: 'throttled', retryAfter: e.retryAfterSeconds! };
    if (isServiceError(e) && e.kind === 'invalid') return { outcome: 'wrong' };
    throw e;
  }
}

failedAuthScenarios(
  'console sign-in on Workers',
  () => ({
    async account(scenario) {
      admin ??= await client(`wt_webadmin_${stamp}`, ['webUserAdd']);
      const username = `wt_web_${scenario}_${stamp}`;
      const secret = `${username}-Pass-1`;
      const query = new URLSearchParams({ id: username, pass: secret, active: 'true' });
      expect((await call('POST', `/v1/web/user/add?${query}`, { auth: admin })).status).toBe(200);
      return { username, secret };
    },
    freshAddress: () => `console-${stamp}-${++addresses}`,
    attempt: signIn,
  }),
  { timeoutMs: 240_000 },
);
