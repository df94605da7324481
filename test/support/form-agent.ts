import type { Hono } from 'hono';
import { expect } from 'vitest';

/** A form's fields: a field given several values is sent once per value. */
export type Form = Record<string, string | string[]>;

export interface Page {
  status: number;
  text: string;
  headers: Headers;
  location: string | null;
  /** The hidden CSRF field of the page's first form. */
  csrf: string | null;
  setCookies: string[];
}

/**
 * A browser of an app's pages through `app.request()`, from an address of its own: a cookie jar,
 * and forms posted with the CSRF token of the page they come from (the console's and the portal's).
 */
export class FormAgent {
  readonly jar = new Map<string, string>();
  constructor(
    // biome-ignore lint/suspicious/noExplicitAny: any app's environment
    readonly app: Hono<any>,
    readonly address: string,
  ) {}

  async request(method: string, path: string, form?: Form, headers: Record<string, string> = {}): Promise<Page> {
    const cookie = [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const body =
      form &&
      new URLSearchParams(Object.entries(form).flatMap(([k, v]) => [v].flat().map((x): [string, string] => [k, x])));
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
    return {
      status: res.status,
      text,
      headers: res.headers,
      location: res.headers.get('location'),
      csrf: /name="csrf" value="([^"]+)"/.exec(text)?.[1] ?? null,
      setCookies,
    };
  }

  get = (path: string) => this.request('GET', path);

  /** Posts a form with the CSRF token of the page it comes from. */
  async submit(from: string, action: string, form: Form = {}) {
    const page = await this.get(from);
    expect(page.csrf, `${from} has a CSRF field`).toBeTruthy();
    return this.request('POST', action, { csrf: page.csrf!, ...form });
  }
}
