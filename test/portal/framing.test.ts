import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapWebAdmin } from '../../core/console/sign-in.ts';
import { withFramingRefused } from '../../functions/http/middleware.ts';
import { FormAgent, type Page } from '../support/form-agent.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { Agent, incomingUser } from './agent.ts';

/**
 * No HTML page of the portal or the console can be framed by another site (clickjacking of its
 * forms): every GET route of the app under /portal and /console is visited, anonymously, with a
 * portal session and with a console session, and every HTML answer is checked.
 */
let h: Harness;
let portal: Agent;
let console_: FormAgent;

beforeAll(async () => {
  h = await createHarness({ portalPages: true });
  const api = await h.client('admin', ['.*']);
  await h.addDestination('FRAMED');
  await incomingUser(h, api, {
    id: 'reader',
    mode: 'standard-login',
    password: 'reader-Pass-1',
    destination: 'FRAMED',
  });
  await incomingUser(h, api, { id: 'open', mode: 'open-access', destination: 'FRAMED' });
  portal = new Agent(h.app);
  expect((await portal.login('reader', 'reader-Pass-1')).status).toBe(303);
  const password = (await bootstrapWebAdmin(h.ports))!;
  console_ = new FormAgent(h.app, 'framing-console');
  const signedIn = await console_.submit('/console/login', '/console/login', { username: 'admin', password });
  expect(signedIn.status).toBe(303);
});
afterAll(() => h?.close());

/** A path for each GET route: parameters filled in (the open-access user where a user is named). */
function visitedPaths() {
  const paths = new Set<string>([
    '/portal/data/',
    '/portal/data/FRAMED/',
    '/portal/home/open/',
    '/portal/nothing-here',
  ]);
  for (const route of h.app.routes) {
    if (route.method !== 'GET' && route.method !== 'ALL') continue;
    if (!/^\/(portal|console)(\/|$)/.test(route.path)) continue;
    paths.add(
      route.path
        .replace(/:user\b[^/]*/g, 'open')
        .replace(/:\w+[^/]*/g, 'x')
        .replace(/\*$/, ''),
    );
  }
  return [...paths];
}

describe('framing of HTML pages', () => {
  it('refuses it on every HTML page of the portal and the console, with a session or without', async () => {
    const html: Array<[string, Page]> = [];
    for (const agent of [new Agent(h.app), portal, console_]) {
      for (const path of visitedPaths()) {
        const page = await agent.get(path);
        if (/^text\/html/.test(page.headers.get('content-type') ?? '')) html.push([`${agent.address} ${path}`, page]);
      }
    }
    for (const [where, page] of html) {
      expect(page.headers.get('x-frame-options'), where).toBe('DENY');
      const policy = page.headers.get('content-security-policy') ?? '';
      expect(
        policy.split(';').map((d) => d.trim()),
        where,
      ).toContain("frame-ancestors 'none'");
      expect(policy.match(/frame-ancestors/g), where).toHaveLength(1);
    }
    // The listings (which hold forms) and the console's pages were among them, behind their sessions.
    const seen = html.filter(([, p]) => p.status === 200).map(([where]) => where);
    expect(seen).toEqual(
      expect.arrayContaining([
        `${portal.address} /portal/data/`,
        `${portal.address} /portal/data/FRAMED/`,
        expect.stringMatching(/ \/portal\/home\/open\/$/),
        `${console_.address} /console/clients`,
        expect.stringMatching(/ \/portal\/login$/),
      ]),
    );
  });

  it('keeps the rest of a page policy, and puts its own frame-ancestors in place of another', () => {
    expect(withFramingRefused(null)).toBe("frame-ancestors 'none'");
    expect(withFramingRefused("default-src 'self'; frame-ancestors https://a.example; img-src 'self'")).toBe(
      "default-src 'self'; frame-ancestors 'none'; img-src 'self'",
    );
    expect(withFramingRefused("default-src 'none'; frame-ancestors 'none'; base-uri 'none'")).toBe(
      "default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(withFramingRefused("default-src 'self'")).toBe("default-src 'self'; frame-ancestors 'none'");
  });
});
