import { beforeAll, describe, expect, it } from 'vitest';
import { login } from '../../core/console/sign-in.ts';
import { call, client, withPorts } from './support.ts';

// Console sign-in limits on the Worker's own ports (its database through Hyperdrive).
const stamp = Date.now().toString(36);
const user = `wt_web_${stamp}`;
const password = `${user}-Pass-1`;

const signIn = (username: string, pass: string, address: string) =>
  withPorts((ports) => login(ports, { username, password: pass, address })).then(
    () => 'in',
    (e: { kind?: string }) => e.kind ?? 'error',
  );

beforeAll(async () => {
  const admin = await client(`wt_webadmin_${stamp}`, ['webUserAdd']);
  const r = await call(
    'POST',
    `/v1/web/user/add?${new URLSearchParams({ id: user, pass: password, active: 'true' })}`,
    {
      auth: admin,
    },
  );
  expect(r.status).toBe(200);
});

describe('console sign-in limits inside workerd', () => {
  it('lets a right password in from an address past its limit, and holds back wrong ones', async () => {
    const address = `addr-${stamp}`;
    for (let i = 0; i < 20; i++) expect(await signIn(`wt_ghost_${stamp}_${i}`, 'x', address)).toBe('invalid');
    expect(await signIn(user, password, address)).toBe('in');
    expect(await signIn(`wt_ghost_${stamp}_x`, 'x', address)).toBe('throttled');
    expect(await signIn(user, 'wrong', address)).toBe('throttled');
  });

  it('refuses a username at the address where its password kept failing, and nowhere else', async () => {
    const address = `pair-${stamp}`;
    for (let i = 0; i < 5; i++) expect(await signIn(user, 'wrong', address)).toBe('invalid');
    expect(await signIn(user, password, address)).toBe('throttled');
    expect(await signIn(user, password, `elsewhere-${stamp}`)).toBe('in');
  });

  it('refuses a username whose password failed from many addresses, wherever it comes from', async () => {
    for (let i = 0; i < 10; i++) expect(await signIn(user, 'wrong', `many-${stamp}-${i}`)).toBe('invalid');
    expect(await signIn(user, password, `fresh-${stamp}`)).toBe('throttled');
  });
});
