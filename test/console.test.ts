import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapWebAdmin, setCategory } from '../core/console/sign-in.ts';
import { type Form, FormAgent, type Page } from './support/form-agent.ts';
import { basic, createHarness, type Harness } from './support/harness.ts';

/** The console's page handlers through `app.request()`, with a cookie jar of our own. */
let h: Harness;
let apiAdmin: string;
let adminPassword: string;
let agents = 0;

/** A browser of the console (see FormAgent), from an address of its own. */
class Agent extends FormAgent {
  constructor(address = `agent-${++agents}`) {
    super(h.app, address);
  }

  login = (username: string, password: string) =>
    this.submit('/console/login', '/console/login', { username, password });
}

// Signing in ends the user's older sessions: tests that sign in an administrator of their own use
// `second`, so the session of `admin` the other tests share stays open.
async function loggedIn(username = 'second', password = 'second-Pass-1') {
  const agent = new Agent();
  const r = await agent.login(username, password);
  expect([r.status, r.location]).toEqual([303, '/console/clients']);
  return agent;
}
const webUser = (id: string, active = true) =>
  h.call('POST', `/v1/web/user/add?${new URLSearchParams({ id, pass: `${id}-Pass-1`, active: String(active) })}`, {
    auth: apiAdmin,
  });
const incomingList = (auth: string) => h.call('GET', '/v1/incoming/user/list', { auth });
const secretOf = (page: Page) => /<p id="secret" class="secret">([^<]+)<\/p>/.exec(page.text)?.[1] ?? '';
const withClock = async (offsetMs: number, work: () => Promise<void>) => {
  const clock = h.ports.clock;
  h.ports.clock = () => new Date(Date.now() + offsetMs);
  await work().finally(() => void (h.ports.clock = clock));
};

let admin: Agent;
beforeAll(async () => {
  h = await createHarness();
  apiAdmin = await h.client('api-admin', ['.*']);
  adminPassword = (await bootstrapWebAdmin(h.ports))!;
  expect(await bootstrapWebAdmin(h.ports)).toBeNull();
  for (const id of ['nobody', 'later', 'second', 'twice', 'demoted']) expect((await webUser(id)).status).toBe(200);
  expect((await webUser('dormant', false)).status).toBe(200);
  for (const id of ['second', 'twice', 'demoted']) await h.ports.repos.console.grant(id, 'administrator');
  admin = await loggedIn('admin', adminPassword);
});
afterAll(() => h.close());

describe('login and sessions', () => {
  it('the login page carries a CSRF field tied to a cookie of its own', async () => {
    const agent = new Agent();
    const page = await agent.get('/console/login');
    expect(page.status).toBe(200);
    for (const home of ['/console', '/console/']) expect((await agent.get(home)).location).toBe('/console/login');
    expect(page.csrf).toMatch(/^\S{20,}$/);
    expect(page.text).toMatch(/<label for="username">/);
    expect(agent.jar.has('ecpds_login_csrf')).toBe(true);
    expect((await agent.request('POST', '/console/login', { username: 'admin', password: adminPassword })).status).toBe(
      403,
    );
    expect(
      (await agent.request('POST', '/console/login', { csrf: 'forged', username: 'admin', password: adminPassword }))
        .status,
    ).toBe(403);
  });

  it('a good password opens a signed, HttpOnly, Secure, SameSite=Strict session cookie on /console', async () => {
    const agent = new Agent();
    const page = await agent.get('/console/login');
    const r = await agent.request('POST', '/console/login', {
      csrf: page.csrf!,
      username: 'second',
      password: 'second-Pass-1',
    });
    expect([r.status, r.location]).toEqual([303, '/console/clients']);
    const cookie = r.headers.getSetCookie().find((c) => c.startsWith('ecpds_console='))!;
    for (const attribute of ['HttpOnly', 'Secure', 'SameSite=Strict', 'Path=/console'])
      expect(cookie).toContain(attribute);
    expect((await agent.get('/console/clients')).text).toContain('<h1>API clients</h1>');
    agent.jar.set('ecpds_console', `forged${agent.jar.get('ecpds_console')}`);
    expect((await agent.get('/console/clients')).location).toBe('/console/login');
  });

  it('a wrong password, an unknown or an inactive user get the same 401 page', async () => {
    for (const [username, password] of [
      ['admin', 'wrong'],
      ['ghost', 'x'],
      ['dormant', 'dormant-Pass-1'],
    ]) {
      const r = await new Agent().login(username!, password!);
      expect(r.status).toBe(401);
      expect(r.text).toContain('Invalid username or password');
      expect(r.headers.getSetCookie().some((c) => c.startsWith('ecpds_console='))).toBe(false);
    }
  });

  it('a user without a category logs in but sees "No access" on every admin page', async () => {
    const agent = await loggedIn('nobody', 'nobody-Pass-1');
    for (const path of [
      '/console/clients',
      '/console/clients/new',
      '/console/users',
      '/console/fields',
      '/console/audit',
    ]) {
      const r = await agent.get(path);
      expect(r.status, path).toBe(403);
      expect(r.text).toContain('<h1>No access</h1>');
      expect(r.text).not.toContain('api-admin');
    }
    const r = await agent.submit('/console/clients', '/console/clients', { username: 'sneaky' });
    expect(r.status).toBe(403);
    expect((await h.call('GET', '/v1/version')).status).toBe(200);
  });

  it('a form post without or with a wrong CSRF token is refused and changes nothing', async () => {
    for (const form of [{ username: 'no-csrf' }, { username: 'no-csrf', csrf: 'wrong' }] as Form[]) {
      const r = await admin.request('POST', '/console/clients', form);
      expect(r.status).toBe(403);
      expect(r.text).toContain('CSRF');
    }
    expect((await admin.get('/console/clients')).text).not.toContain('no-csrf');
    expect((await new Agent().request('POST', '/console/logout', { csrf: 'x' })).status).toBe(403);
  });

  it('a session idle for more than 30 minutes ends; activity keeps it alive', async () => {
    const agent = await loggedIn();
    await withClock(20 * 60_000, async () => expect((await agent.get('/console/clients')).status).toBe(200));
    await withClock(40 * 60_000, async () => expect((await agent.get('/console/clients')).status).toBe(200));
    await withClock(71 * 60_000, async () => {
      const r = await agent.get('/console/clients');
      expect([r.status, r.location]).toEqual([303, '/console/login']);
    });
    expect((await agent.get('/console/clients')).location).toBe('/console/login');
  });

  it('signing in again ends the older sessions of the user, not those of others', async () => {
    const first = await loggedIn('twice', 'twice-Pass-1');
    const other = await loggedIn('demoted', 'demoted-Pass-1');
    expect((await first.get('/console/clients')).status).toBe(200);
    const second = await loggedIn('twice', 'twice-Pass-1');
    const r = await first.get('/console/clients');
    expect([r.status, r.location]).toEqual([303, '/console/login']);
    expect((await first.request('POST', '/console/logout', { csrf: 'any' })).status).toBe(403);
    for (const agent of [second, other]) expect((await agent.get('/console/clients')).status).toBe(200);
    const logins = (await h.ports.repos.console.auditTrail(500)).filter(
      (e) => e.action === 'login' && e.target === 'twice',
    );
    expect(logins).toHaveLength(2);
  });

  it('two sign-ins of one user at once leave one session open', async () => {
    const agents = await Promise.all([1, 2, 3].map(() => loggedIn('twice', 'twice-Pass-1')));
    const statuses = await Promise.all(agents.map(async (agent) => (await agent.get('/console/clients')).status));
    expect(statuses.sort()).toEqual([200, 303, 303]);
  });

  it('logout ends the session on the server, not just the cookie', async () => {
    const agent = await loggedIn();
    const cookie = agent.jar.get('ecpds_console')!;
    const r = await agent.submit('/console/clients', '/console/logout');
    expect([r.status, r.location]).toEqual([303, '/console/login']);
    expect(r.headers.getSetCookie().find((c) => c.startsWith('ecpds_console='))).toMatch(/Max-Age=0/i);
    agent.jar.set('ecpds_console', cookie);
    expect((await agent.get('/console/clients')).location).toBe('/console/login');
  });
});

describe('API clients', () => {
  let secret = '';
  const edit = (form: Form) => admin.submit('/console/clients/c1', '/console/clients/c1/permissions', form);
  const permissions = async () => (await h.ports.repos.clients.find('c1'))!.permissions;

  it('create shows the secret once, with a copy button, and the secret works on the API', async () => {
    const form = await admin.get('/console/clients/new');
    expect(form.text.match(/type="checkbox" name="service"/g)).toHaveLength(26);
    expect(form.text).toContain('value="showSensitiveInfo"');
    const names = /<script type="application\/json" id="service-names">(.*?)<\/script>/.exec(form.text)![1]!;
    expect(JSON.parse(names)).toHaveLength(26); // raw text for the HTML parser: entities would break the live report
    const r = await admin.submit('/console/clients/new', '/console/clients', {
      username: 'c1',
      service: ['incomingUserList', 'destinationList', 'bogus'],
    });
    expect(r.status).toBe(200);
    secret = secretOf(r);
    expect(secret.length).toBeGreaterThan(20);
    expect(r.text).toContain('data-copy="secret"');
    expect(await permissions()).toEqual(['incomingUserList', 'destinationList']);
    expect((await incomingList(basic('c1', secret))).status).toBe(200);
    await h.settle();
    for (const path of ['/console/clients', '/console/clients/c1', '/console/audit'])
      expect((await admin.get(path)).text).not.toContain(secret);
    const list = (await admin.get('/console/clients')).text;
    expect(list).toMatch(
      new RegExp(
        String.raw`<a href="\/console\/clients\/c1">c1<\/a><\/td><td>incomingUserList, destinationList<\/td>` +
          String.raw`<td>\d{4}-\d\d-\d\d \d\d:\d\d<\/td><td>\d{4}-`,
      ),
    );
  });

  it('refuses a duplicate or invalid username with a message', async () => {
    const dup = await admin.submit('/console/clients/new', '/console/clients', { username: 'c1' });
    expect([dup.status, dup.text.includes('Client c1 already exists')]).toEqual([400, true]);
    const bad = await admin.submit('/console/clients/new', '/console/clients', { username: 'a b<' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Invalid client username: a b&lt;');
  });

  it('checkbox changes take effect on the next API call', async () => {
    expect((await edit({ service: 'destinationList' })).status).toBe(303);
    expect(await permissions()).toEqual(['destinationList']);
    const refused = await incomingList(basic('c1', secret));
    expect([refused.status, refused.json.message]).toEqual([500, 'User not authorized']);
    expect((await h.call('GET', '/v1/destination/list', { auth: basic('c1', secret) })).status).toBe(200);
    const page = (await admin.get('/console/clients/c1')).text;
    expect(page).toMatch(/value="destinationList" checked=""/);
    expect(page).not.toMatch(/value="incomingUserList" checked/);
  });

  it('free expressions take effect too, and are shown in the editor', async () => {
    expect(
      (await edit({ service: 'destinationList', expressions: 'incomingUser.*\r\n\r\n  webUserList  ' })).status,
    ).toBe(303);
    expect(await permissions()).toEqual(['destinationList', 'incomingUser.*', 'webUserList']);
    expect((await incomingList(basic('c1', secret))).status).toBe(200);
    const page = (await admin.get('/console/clients/c1')).text;
    expect(page).toMatch(/<textarea id="expressions"[^>]*>incomingUser\.\*<\/textarea>/);
    expect(page).toMatch(/value="webUserList" checked=""/);
    expect((await edit({})).status).toBe(303);
    expect(await permissions()).toEqual([]);
    expect((await incomingList(basic('c1', secret))).json.message).toBe('User not authorized');
  });

  it('a regex that does not compile is refused with a message and nothing is saved', async () => {
    await edit({ expressions: 'incomingUser.*' });
    const r = await edit({ service: 'destinationList', expressions: 'incoming(User' });
    expect(r.status).toBe(400);
    expect(r.text).toContain('Invalid permission expression: incoming(User');
    expect(r.text).toContain('incoming(User</textarea>');
    expect(await permissions()).toEqual(['incomingUser.*']);
  });

  it('reset shows a new secret once; the old one stops working', async () => {
    const r = await admin.submit('/console/clients/c1', '/console/clients/c1/reset');
    const fresh = secretOf(r);
    expect(fresh).not.toBe(secret);
    expect((await incomingList(basic('c1', secret))).json.message).toBe('User not authorized');
    expect((await incomingList(basic('c1', fresh))).status).toBe(200);
    secret = fresh;
  });

  it('delete asks for confirmation, then the client is gone', async () => {
    const confirm = await admin.get('/console/clients/c1/delete');
    expect(confirm.text).toContain('<h1>Delete c1?</h1>');
    expect(confirm.text).toMatch(/<form method="post" action="\/console\/clients\/c1\/delete">/);
    const r = await admin.submit('/console/clients/c1/delete', '/console/clients/c1/delete');
    expect([r.status, r.location]).toEqual([303, '/console/clients']);
    expect((await incomingList(basic('c1', secret))).json.message).toBe('User not authorized');
    expect((await admin.get('/console/clients')).text).not.toContain('/console/clients/c1"');
    expect((await admin.get('/console/clients/c1')).status).toBe(404);
    for (const action of ['reset', 'delete']) {
      const r = await admin.submit('/console/clients', `/console/clients/c1/${action}`);
      expect([r.status, r.text.includes('No client named c1')]).toEqual([404, true]);
    }
  });
});

describe('web users', () => {
  const row = async (id: string) =>
    new RegExp(`<th scope="row">${id}</th>.*?</tr>`, 's').exec((await admin.get('/console/users')).text)?.[0] ?? '';

  it('lists users with their roles; grant and revoke change console access at once', async () => {
    expect(await row('admin')).toContain('administrator');
    expect(await row('later')).toContain('<td>none</td>');
    const later = await loggedIn('later', 'later-Pass-1');
    expect((await later.get('/console/clients')).status).toBe(403);
    expect(
      (await admin.submit('/console/users', '/console/users/later/grant', { category: 'administrator' })).location,
    ).toBe('/console/users');
    expect((await later.get('/console/clients')).status).toBe(200);
    await admin.submit('/console/users', '/console/users/later/grant', { category: 'operator' });
    expect(
      (await admin.submit('/console/users', '/console/users/later/revoke', { category: 'administrator' })).status,
    ).toBe(303);
    expect(await row('later')).toMatch(/operator <button/);
    expect((await later.get('/console/clients')).status).toBe(403);
  });

  it('an unknown category or user is refused with a message', async () => {
    const r = await admin.submit('/console/users', '/console/users/later/grant', { category: 'wizard' });
    expect([r.status, r.text.includes('Category wizard not found')]).toEqual([400, true]);
    expect((await admin.submit('/console/users', '/console/users/ghost/active', { active: 'true' })).text).toContain(
      'User ghost not found',
    );
  });

  it('an administrator cannot lock themself out', async () => {
    const self = await admin.submit('/console/users', '/console/users/admin/active', { active: 'false' });
    expect([self.status, self.text.includes('You cannot deactivate your own account')]).toEqual([400, true]);
    const revoke = await admin.submit('/console/users', '/console/users/admin/revoke', { category: 'administrator' });
    expect([revoke.status, revoke.text.includes('would end your own console access')]).toEqual([400, true]);
    expect(await row('admin')).toMatch(/<td>yes<\/td>.*administrator/s);
  });

  it('a role revoked from the command line takes effect on the open session at its next request', async () => {
    const demoted = await loggedIn('demoted', 'demoted-Pass-1');
    expect((await demoted.get('/console/users')).status).toBe(200);
    // What `ecpds-edge webuser revoke demoted administrator` runs.
    await setCategory(h.ports, 'cli', 'demoted', 'administrator', false);
    for (const path of ['/console/users', '/console/clients']) {
      const r = await demoted.get(path);
      expect(r.status, path).toBe(403);
      expect(r.text).toContain('<h1>No access</h1>');
    }
    const refused = await demoted.submit('/console/users', '/console/users/demoted/grant', {
      category: 'administrator',
    });
    expect(refused.status).toBe(403);
    expect(await h.ports.repos.console.categoriesOf('demoted')).toEqual([]);
    const trail = await h.ports.repos.console.auditTrail(500);
    expect(trail.filter((e) => e.target === 'demoted' && e.action === 'revoke category')).toEqual([
      expect.objectContaining({ actor: 'cli', detail: 'administrator' }),
    ]);
  });

  it('deactivate ends the sessions of the user and refuses its login; activate lets it back', async () => {
    const later = await loggedIn('later', 'later-Pass-1');
    await admin.submit('/console/users', '/console/users/later/active', { active: 'false' });
    expect(await row('later')).toMatch(/<td>no<\/td>.*Activate/s);
    expect((await later.get('/console/clients')).location).toBe('/console/login');
    expect((await new Agent().login('later', 'later-Pass-1')).status).toBe(401);
    await admin.submit('/console/users', '/console/users/later/active', { active: 'true' });
    // Ended, not only refused while inactive: activating again does not revive them.
    expect((await later.get('/console/clients')).location).toBe('/console/login');
    await loggedIn('later', 'later-Pass-1');
  });
});

describe('metadata fields', () => {
  const field = {
    name: 'colour',
    label: 'Colour <b>',
    type: 'text',
    category: 'General',
    maxOccurs: '1',
    position: '3',
    editable: 'on',
    active: 'on',
  };
  const save = (form: Form, from = '/console/fields/new') => admin.submit(from, '/console/fields', form);

  it('creates a field and lists it, escaped', async () => {
    expect((await save(field)).location).toBe('/console/fields');
    const list = (await admin.get('/console/fields')).text;
    expect(list).toMatch(
      new RegExp(
        String.raw`<a href="\/console\/fields\/\d+">colour<\/a><\/td><td>Colour &lt;b&gt;<\/td><td>text<\/td>` +
          String.raw`<td>General<\/td><td>yes<\/td><td>one<\/td><td>yes<\/td>`,
      ),
    );
  });

  it.each([
    ['name', '1colour', 'name: 1 to 64 letters'],
    ['type', 'colourful', 'type must be one of'],
    ['maxOccurs', '0', 'maxOccurs must be 1 (single value), -1 (any number) or a maximum above 1'],
    ['maxOccurs', 'many', 'maxOccurs'],
    ['label', ' ', 'label must not be empty'],
  ])('refuses a bad %s (%s) like the CLI import, nothing saved', async (key, value, message) => {
    const r = await save({ ...field, name: 'shade', [key]: value });
    expect(r.status).toBe(400);
    expect(r.text).toContain('role="alert"');
    expect(r.text).toContain(message);
    expect((await h.ports.repos.metadata.fields()).some((f) => f.name === 'shade' || f.name === '1colour')).toBe(false);
  });

  it('edits a field by name, the name fixed', async () => {
    const id = /href="\/console\/fields\/(\d+)">colour</.exec((await admin.get('/console/fields')).text)![1];
    const page = (await admin.get(`/console/fields/${id}`)).text;
    expect(page).toMatch(/name="name" type="text" value="colour" readonly=""/);
    expect(page).toMatch(/<option value="text" selected="">/);
    expect(
      (await save({ ...field, label: 'Colour', maxOccurs: '-1', editable: [] }, `/console/fields/${id}`)).status,
    ).toBe(303);
    expect((await h.ports.repos.metadata.fields()).find((f) => f.name === 'colour')).toMatchObject({
      label: 'Colour',
      maxOccurs: -1,
      editable: false,
      position: 3,
    });
    const bad = await save({ ...field, maxOccurs: '0' }, `/console/fields/${id}`);
    expect([bad.status, bad.text.includes('<h1>Field colour</h1>')]).toEqual([400, true]);
  });

  it('a password field keeps its sealed default when edited, unless removed', async () => {
    await save({ ...field, name: 'token', type: 'password', defaultValue: 'S3cret-default', editable: [] });
    const stored = async () => (await h.ports.repos.metadata.fields()).find((f) => f.name === 'token')!;
    const id = (await stored()).id;
    const page = (await admin.get(`/console/fields/${id}`)).text;
    expect(page).not.toContain('S3cret-default');
    await save(
      { ...field, name: 'token', type: 'password', label: 'Token', defaultValue: '', editable: [] },
      `/console/fields/${id}`,
    );
    expect(await h.ports.secrets.decrypt((await stored()).defaultValue!)).toBe('S3cret-default');
    expect((await stored()).label).toBe('Token');
    await save(
      { ...field, name: 'token', type: 'password', defaultValue: '', clearDefault: 'on' },
      `/console/fields/${id}`,
    );
    expect((await stored()).defaultValue).toBeNull();
  });
});

describe('audit trail and markup', () => {
  it('lists who changed what, newest first, never a secret', async () => {
    const text = (await admin.get('/console/audit')).text;
    const rows = [...text.matchAll(/<tr><td>[^<]+<\/td><td>([^<]*)<\/td><td>([^<]*)<\/td><td>([^<]*)<\/td>/g)].map(
      (m) => `${m[1]}|${m[2]}|${m[3]}`,
    );
    for (const entry of [
      'admin|create|API client c1',
      'admin|set permissions|API client c1',
      'admin|reset secret|API client c1',
      'admin|delete|API client c1',
      'admin|grant category|web user later',
      'admin|revoke category|web user later',
      'admin|deactivate|web user later',
      'admin|activate|web user later',
      'admin|create|metadata field colour',
      'admin|update|metadata field colour',
      'admin|login|web user admin',
    ])
      expect(rows).toContain(entry);
    expect(rows.indexOf('admin|update|metadata field colour')).toBeLessThan(
      rows.indexOf('admin|create|metadata field colour'),
    );
    expect(text).not.toContain(adminPassword);
  });

  it('every page has a CSP, no external asset and accessible landmarks', async () => {
    const pages = [
      '/console/login',
      '/console/clients',
      '/console/clients/new',
      '/console/clients/api-admin',
      '/console/clients/api-admin/delete',
      '/console/users',
      '/console/fields',
      '/console/fields/new',
      '/console/audit',
    ];
    for (const path of pages) {
      const r = await (path === '/console/login' ? new Agent() : admin).get(path);
      expect(r.status, path).toBe(200);
      expect(r.headers.get('content-security-policy'), path).toContain("default-src 'self'");
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(r.text).toMatch(/^<!doctype html><html lang="en">/);
      expect(r.text).toContain('<meta name="viewport" content="width=device-width, initial-scale=1"/>');
      expect(r.text).not.toMatch(/(src|href|action)="(https?:)?\/\//);
      expect(r.text).not.toMatch(/ style=|<style|<script>/);
      for (const [, id] of r.text.matchAll(/<(?:input|select|textarea) id="([^"]+)"/g))
        expect(r.text, `${path} #${id}`).toContain(`for="${id}"`);
    }
    const css = await admin.get('/console/assets/console.css');
    expect([css.status, css.headers.get('content-type')]).toEqual([200, 'text/css; charset=utf-8']);
    expect(css.text).not.toMatch(/url\(|@import/);
    expect((await admin.get('/console/assets/console.js')).text).not.toMatch(/https?:\/\//);
  });
});
