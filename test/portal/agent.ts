import type { Hono } from 'hono';
import { expect } from 'vitest';
import { sha256Base64 } from '../../core/common/crypto.ts';
import type { Harness } from '../support/harness.ts';

/** A browser of the portal's pages through `app.request()`: a cookie jar, forms posted with their page's token. */
export interface Page {
  status: number;
  text: string;
  headers: Headers;
  location: string | null;
  /** The hidden CSRF field of the page's first form. */
  csrf: string | null;
  setCookies: string[];
}

let agents = 0;

export class Agent {
  readonly jar = new Map<string, string>();
  constructor(
    readonly app: Hono<any>,
    readonly address = `portal-agent-${++agents}`,
  ) {}

  async request(method: string, path: string, form?: Record<string, string>, headers: Record<string, string> = {}) {
    const cookie = [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const body = form && new URLSearchParams(form).toString();
    const res = await this.app.request(`https://localhost${path}`, {
      method,
      body,
      headers: {
        'x-test-address': this.address,
        ...(cookie && { cookie }),
        ...(body !== undefined && { 'content-type': 'application/x-www-form-urlencoded' }),
        ...headers,
      },
    });
    const setCookies = res.headers.getSetCookie();
    for (const line of setCookies) {
      const [, name, value] = /^([^=]+)=([^;]*)/.exec(line)!;
      if (value === '' || /max-age=0\b/i.test(line)) this.jar.delete(name!);
      else this.jar.set(name!, value!);
    }
    const text = await res.text();
    const page: Page = {
      status: res.status,
      text,
      headers: res.headers,
      location: res.headers.get('location'),
      csrf: /name="csrf" value="([^"]+)"/.exec(text)?.[1] ?? null,
      setCookies,
    };
    return page;
  }

  get = (path: string) => this.request('GET', path);

  /** Posts a form with the CSRF token of the page it comes from. */
  async submit(from: string, action: string, form: Record<string, string> = {}) {
    const page = await this.get(from);
    expect(page.csrf, `${from} has a CSRF field`).toBeTruthy();
    return this.request('POST', action, { csrf: page.csrf!, ...form });
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
