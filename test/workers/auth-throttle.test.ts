import { expect } from 'vitest';
import { create } from '../../core/api-clients/clients.ts';
import { type Answer, failedAuthScenarios } from '../support/failed-auth-scenarios.ts';
import { call, withPorts } from './support.ts';

// The Worker's own rules (the production ones, with real delays), its address from CF-Connecting-IP.
// Usernames and addresses are fresh per run, so the isolate's memory of other tests does not matter.
const stamp = Date.now().toString(36);
let addresses = 0;

failedAuthScenarios('API on Workers', () => ({
  async account(scenario) {
    const username = `wt_${scenario}_${stamp}`;
    const { secret } = await withPorts((ports) =>
      create(ports, 'test', { username, permissions: ['incomingUserList'], origin: 'cli' }),
    );
    return { username, secret };
  },
  freshAddress: () => `2001:db8:${stamp}::${(++addresses).toString(16)}`,
  async attempt(username, secret, address): Promise<Answer> {
    const r = await call('GET', '/v1/incoming/user/list', {
      auth: `Basic ${btoa(`${username}:${secret}`)}`,
      headers: { 'cf-connecting-ip': address },
    });
    if (r.status === 429) {
      expect(r.text).toBe('Too many failed authentications; try again later');
      return { outcome: 'throttled', retryAfter: Number(r.headers.get('retry-after')) };
    }
    if (r.status === 500) return { outcome: 'wrong' };
    if (r.status === 200) return { outcome: 'in' };
    throw new Error(`unexpected status ${r.status}: ${r.text}`);
  },
}));
