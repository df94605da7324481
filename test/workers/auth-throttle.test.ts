import { beforeAll, describe, expect, it } from 'vitest';
import { AUTH_THROTTLE_DEFAULTS } from '../../core/api-clients/auth-throttle.ts';
import { call, client } from './support.ts';

// The Worker's own limits (the defaults), its address from CF-Connecting-IP. Usernames and
// addresses are fresh per run and per test, so the isolate's memory of other tests does not matter.
const stamp = Date.now().toString(36);
const { maxPerUsername, maxPerUsernameAddress, maxPerAddress } = AUTH_THROTTLE_DEFAULTS;
let alpha: string;
let beta: string;

const basic = (username: string, secret: string) => `Basic ${btoa(`${username}:${secret}`)}`;
const list = (auth: string, address: string) =>
  call('GET', '/v1/incoming/user/list', { auth, headers: { 'cf-connecting-ip': address } });

beforeAll(async () => {
  alpha = await client(`wt_alpha_${stamp}`, ['incomingUserList']);
  beta = await client(`wt_beta_${stamp}`, ['incomingUserList']);
});

describe('failed-authentication limits inside workerd', () => {
  it('lets a right secret through from an address past its limit, and holds back wrong ones', async () => {
    const address = '203.0.113.10';
    for (let i = 0; i < maxPerAddress; i++) {
      expect((await list(basic(`wt_ghost_${stamp}_${i}`, 'x'), address)).status).toBe(500);
    }
    for (const auth of [alpha, beta]) expect((await list(auth, address)).status).toBe(200);
    const refused = await list(basic(`wt_ghost_${stamp}_x`, 'x'), address);
    expect([refused.status, refused.text]).toEqual([429, 'Too many failed authentications; try again later']);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await list(basic(`wt_beta_${stamp}`, 'wrong'), address)).status).toBe(429);
  });

  it('refuses a username at the address where its secret kept failing, and nowhere else', async () => {
    const address = '203.0.113.20';
    for (let i = 0; i < maxPerUsernameAddress; i++) {
      expect((await list(basic(`wt_alpha_${stamp}`, 'stale'), address)).status).toBe(500);
    }
    expect((await list(alpha, address)).status).toBe(429);
    expect((await list(alpha, '203.0.113.21')).status).toBe(200);
    expect((await list(beta, address)).status).toBe(200);
  });

  it('refuses a username whose secret failed from many addresses, wherever it comes from', async () => {
    // alpha failed maxPerUsernameAddress times in the previous test; these reach its own limit.
    for (let i = maxPerUsernameAddress; i < maxPerUsername; i++) {
      expect((await list(basic(`wt_alpha_${stamp}`, 'guess'), `198.51.100.${i}`)).status).toBe(500);
    }
    const refused = await list(alpha, '198.51.100.200');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await list(beta, '198.51.100.200')).status).toBe(200);
  });
});
