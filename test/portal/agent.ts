import type { Hono } from 'hono';
import { expect } from 'vitest';
import { sha256Base64 } from '../../core/common/crypto.ts';
import { FormAgent } from '../support/form-agent.ts';
import type { Harness } from '../support/harness.ts';

let agents = 0;

/** A browser of the portal's pages (see FormAgent), which logs in through the portal's form. */
export class Agent extends FormAgent {
  constructor(app: Hono<any>, address = `portal-agent-${++agents}`) {
    super(app, address);
  }

  login = (login: string, password: string, next?: string) =>
    this.submit('/portal/login', '/portal/login', { login, password, ...(next !== undefined && { next }) });

  /** The stored key of this browser's session: the hash of the token its signed cookie carries. */
  sessionKey() {
    const value = decodeURIComponent(this.jar.get('ecpds_portal') ?? '');
    return value === '' ? null : sha256Base64(value.slice(0, value.lastIndexOf('.')));
  }
}

/** Creates or updates an incoming user through the API, associated with `destination`. */
export async function incomingUser(
  h: Harness,
  auth: string,
  user: { id: string; mode: string; password?: string; active?: boolean; destination?: string },
) {
  const params = new URLSearchParams({
    id: user.id,
    email: `${user.id}@example.org`,
    iso: 'gb',
    portalService: user.mode,
    active: 'true',
    ...(user.password !== undefined && { pass: user.password }),
  });
  const path = user.password === undefined ? '/v1/incoming/user/add2' : '/v1/incoming/user/add';
  expect((await h.call('POST', `${path}?${params}`, { auth })).status).toBe(200);
  if (user.destination) {
    const association = new URLSearchParams({ id: user.id, destination: user.destination });
    expect((await h.call('POST', `/v1/incoming/association/add?${association}`, { auth })).status).toBe(200);
  }
  // Only an active user takes an association: one meant inactive is disabled after.
  if (user.active === false) await setActive(h, auth, user.id, false);
}

export async function setActive(h: Harness, auth: string, id: string, active: boolean) {
  const params = new URLSearchParams({ id, email: `${id}@example.org`, iso: 'gb', active: String(active) });
  expect((await h.call('POST', `/v1/incoming/user/add2?${params}`, { auth })).status).toBe(200);
}
