import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Base64 } from '../../core/common/crypto.ts';
import { bootstrapWebAdmin } from '../../core/console/sign-in.ts';
import { dayOfTraffic } from '../../core/portal/admin.ts';
import { parseMail } from '../../functions/node/config.ts';
import { smtpMailer } from '../../functions/node/mail.ts';
import { FormAgent } from '../support/form-agent.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { freePort } from '../support/processes.ts';
import { passwordIn, type SmtpReceiver, startSmtpReceiver } from '../support/servers/smtp.ts';

/** The console's incoming-user pages through `app.request()`, on the suite's database, with a real SMTP server. */
let h: Harness;
let api: string;
let smtp: SmtpReceiver;
/** The portal's own mailer, to this SMTP URL. */
const mailerTo = (url: string) => smtpMailer(parseMail(url, 'portal@example.org')!);

/** A browser of the console from one address (see FormAgent). */
class Agent extends FormAgent {
  constructor() {
    super(h.app, 'portal-console');
  }
}

async function signIn(username: string, password: string) {
  const agent = new Agent();
  const r = await agent.submit('/console/login', '/console/login', { username, password });
  expect([r.status, r.location]).toEqual([303, '/console/clients']);
  return agent;
}

const PAGE = '/console/incoming/consumer';
const addUser = (id: string, portalService: string, active = true) => {
  const q = { id, email: `${id}@example.org`, iso: 'gb', pass: 'Secret-1', portalService, active: String(active) };
  return h.call('POST', `/v1/incoming/user/add?${new URLSearchParams(q)}`, { auth: api });
};
const trail = () => h.ports.repos.console.auditTrail(500);
const newRows = async (before: number) => {
  const all = await trail();
  return all.slice(0, all.length - before).map((a) => [a.actor, a.action, a.targetKind, a.target, a.detail]);
};
const subscriber = async (userId: string, email: string, name = email.split('@')[0]!) => {
  const at = h.ports.clock();
  const id = (await h.ports.repos.portal.addSubscriber(
    { userId, name, email, iso: 'fr', tokenHash: sha256Base64(`token-${email}`), tokenExpiresAt: at },
    at,
  ))!;
  await h.ports.repos.portal.changeSubscriber(id, ['unverified'], { status: 'verified', at, clearToken: true });
  return id;
};
const statusOf = async (id: number) => (await h.ports.repos.portal.subscriber(id))?.status;

let admin: Agent;
let hourStart: Date;
beforeAll(async () => {
  h = await createHarness();
  // One instant for the whole file: the chart's hours must not move between setting traffic and reading it.
  const fixed = new Date();
  h.ports.clock = () => fixed;
  smtp = await startSmtpReceiver();
  api = await h.client('api-admin', ['.*']);
  const password = (await bootstrapWebAdmin(h.ports))!;
  for (const [id, mode] of [
    ['consumer', 'self-service'],
    ['open', 'open-access'],
    ['sleeper', 'standard-login'],
  ] as const) {
    expect((await addUser(id, mode, id !== 'sleeper')).status).toBe(200);
  }
  for (const d of ['MO_EXETER', 'DWD_OFFENBACH']) {
    await h.addDestination(d);
    const r = await h.call('POST', `/v1/incoming/association/add?id=consumer&destination=${d}`, { auth: api });
    expect(r.status, r.text).toBe(200);
  }
  const q = new URLSearchParams({ id: 'clerk', pass: 'clerk-Pass-1', active: 'true' });
  expect((await h.call('POST', `/v1/web/user/add?${q}`, { auth: api })).status).toBe(200);
  admin = await signIn('admin', password);

  // Traffic two hours ago and in this hour; one row from beyond 24 hours, which the chart leaves out.
  const now = h.ports.clock().getTime();
  hourStart = new Date(Math.floor(now / 3600_000) * 3600_000);
  const traffic = (downloadBytes: number, uploadBytes: number) => ({
    downloadBytes,
    uploadBytes,
    downloads: downloadBytes > 0 ? 1 : 0,
    uploads: uploadBytes > 0 ? 1 : 0,
  });
  const minute = (ms: number) => new Date(Math.floor(ms / 60_000) * 60_000);
  await h.ports.repos.portal.addTraffic(
    'consumer',
    minute(hourStart.getTime() - 2 * 3600_000 + 60_000),
    'https',
    traffic(3 * 1048576, 0),
  );
  await h.ports.repos.portal.addTraffic(
    'consumer',
    minute(hourStart.getTime() - 2 * 3600_000 + 120_000),
    'sftp',
    traffic(1048576, 2048),
  );
  await h.ports.repos.portal.addTraffic('consumer', minute(now), 'https', traffic(512, 4096));
  await h.ports.repos.portal.addTraffic('consumer', minute(now - 25 * 3600_000), 'https', traffic(999_999, 0));
  await h.ports.repos.portal.recordLogin('consumer', new Date('2026-11-20T08:30:00Z'), '192.0.2.7');
});
afterAll(async () => {
  await smtp?.stop();
  await h?.close();
});

describe('the incoming users list', () => {
  it('is in the nav, lists every user with its mode, activity and destinations, and filters', async () => {
    const page = await admin.get('/console/incoming');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<a href="/console/incoming">Incoming users</a>');
    expect(page.text).toContain('<h1>Incoming users</h1>');
    const rows = [...page.text.matchAll(/<tr><th scope="row"><a href="([^"]+)">([^<]+)<\/a><\/th>(.*?)<\/tr>/g)];
    expect(rows.map((r) => [r[1], r[2]])).toEqual([
      ['/console/incoming/consumer', 'consumer'],
      ['/console/incoming/open', 'open'],
      ['/console/incoming/sleeper', 'sleeper'],
    ]);
    expect(rows[0]![3]).toContain('<td>self-service</td><td>yes</td><td>DWD_OFFENBACH, MO_EXETER</td>');
    expect(rows[2]![3]).toContain('<td>standard-login</td><td>no</td><td>none</td><td>never</td>');
    const filtered = await admin.get('/console/incoming?q=SLEEP');
    expect(filtered.text).toContain('>sleeper</a>');
    expect(filtered.text).not.toContain('>consumer</a>');
    expect(filtered.text).toContain('1 of 3 users.');
  });

  it('is for administrators only', async () => {
    const anonymous = await new Agent().get('/console/incoming');
    expect([anonymous.status, anonymous.location]).toEqual([303, '/console/login']);
    const clerk = await signIn('clerk', 'clerk-Pass-1');
    for (const path of ['/console/incoming', PAGE]) {
      const r = await clerk.get(path);
      expect(r.status, path).toBe(403);
      expect(r.text).toContain('<h1>No access</h1>');
    }
    const r = await clerk.submit('/console/clients', `${PAGE}/permissions`, { operation: 'put' });
    expect(r.status).toBe(403);
    expect(await h.ports.repos.portal.permissions('consumer')).not.toContain('put');
  });
});

describe("an incoming user's page", () => {
  it('shows its mode, activity, destinations, last login, permissions, options and subscribers', async () => {
    await h.ports.repos.portal.setOption('consumer', 'portal.maxConnections', '4');
    const page = await admin.get(PAGE);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<h1>Incoming user consumer</h1>');
    expect(page.text).toContain('<strong>self-service</strong>');
    expect(page.text).toContain('<dt>Active</dt><dd>yes</dd>');
    expect(page.text).toContain('<dd>2026-11-20 08:30:00 UTC from 192.0.2.7</dd>');
    expect(page.text).toContain('<a href="/console/monitor/destinations/DWD_OFFENBACH">DWD_OFFENBACH</a>');
    for (const op of ['dir', 'get', 'mtime', 'size']) {
      expect(page.text).toMatch(new RegExp(`<input type="checkbox" name="operation" value="${op}" checked=""`));
    }
    expect(page.text).toMatch(/<input type="checkbox" name="operation" value="put"\/?>/);
    // Every option with what it expects; a set one shows its value and can be removed.
    expect(page.text).toContain('<code>portal.registrationAutoApprove</code>');
    expect(page.text).toContain('a duration such as 24h or P1D (default 24h)');
    expect(page.text).toMatch(/name="value" type="text" value="4"/);
    expect(page.text).toContain('aria-label="Remove portal.maxConnections"');
    expect(page.text).not.toContain('aria-label="Remove portal.maxDownloadBytes"');
    expect(page.text).toContain('<p>No subscriber.</p>');

    const inactive = await admin.get('/console/incoming/sleeper');
    expect(inactive.text).toContain('no: the user cannot log in');
    expect(inactive.text).toContain('none: the user cannot log in');
    expect(inactive.text).toContain('<dd>never</dd>');
    expect((await admin.get('/console/incoming/ghost')).status).toBe(404);
  });

  it('charts the last 24 hours of traffic per hour in inline SVG, with the same figures as a table', async () => {
    const page = await admin.get(PAGE);
    const svg = /<svg class="traffic"[^>]*>[\s\S]*?<\/svg>/.exec(page.text)?.[0] ?? '';
    expect(svg).toContain('role="img"');
    expect(svg).toContain('aria-label="Bytes downloaded and uploaded per hour over the last 24 hours: 4.0 MiB down');
    expect(svg.match(/<title>/g)).toHaveLength(24);
    const twoHoursAgo = new Date(hourStart.getTime() - 2 * 3600_000).toISOString().slice(11, 16);
    expect(svg).toContain(`<title>${twoHoursAgo} UTC: 4.0 MiB down, 2.0 KiB up</title>`);
    expect(page.text).toContain('4.0 MiB down in 3 downloads, 6.0 KiB up in 2 uploads (hours in UTC).');
    expect(page.text).not.toMatch(/<script(?! src="\/console\/assets\/console\.js")/);
    expect(page.text).not.toMatch(/ style="/);

    const table = /<table class="traffic-table">[\s\S]*?<\/table>/.exec(page.text)?.[0] ?? '';
    const rows = [...table.matchAll(/<tr><th scope="row">([^<]+)<\/th>((?:<td>[^<]*<\/td>)+)<\/tr>/g)];
    expect(rows).toHaveLength(24);
    const hourText = `${new Date(hourStart.getTime() - 2 * 3600_000).toISOString().slice(0, 10)} ${twoHoursAgo}`;
    expect(rows.find((r) => r[1] === hourText)?.[2]).toBe('<td>4.0 MiB</td><td>2</td><td>2.0 KiB</td><td>1</td>');
    expect(rows.at(-1)?.[2]).toBe('<td>512 B</td><td>1</td><td>4.0 KiB</td><td>1</td>');
  });

  it('gives the traffic per minute too: 1,440 minutes, the current one last', async () => {
    const { buckets, total } = await dayOfTraffic(h.ports, 'consumer', 'minute');
    expect(buckets).toHaveLength(1440);
    expect(buckets.at(-1)!.start.getTime()).toBe(Math.floor(h.ports.clock().getTime() / 60_000) * 60_000);
    expect(buckets.filter((b) => b.downloadBytes > 0).map((b) => b.downloadBytes)).toEqual([3 * 1048576, 1048576, 512]);
    expect(total).toEqual({ downloadBytes: 4 * 1048576 + 512, uploadBytes: 6144, downloads: 3, uploads: 2 });
  });
});

describe('permissions', () => {
  it('saves the checked operations with the CSRF token, audited with what changed', async () => {
    const before = (await trail()).length;
    const r = await admin.submit(PAGE, `${PAGE}/permissions`, { operation: ['dir', 'get', 'size', 'put', 'rename'] });
    expect([r.status, r.location]).toEqual([303, `${PAGE}?done=permissions#permissions`]);
    expect(await h.ports.repos.portal.permissions('consumer')).toEqual(['dir', 'get', 'put', 'rename', 'size']);
    expect(await newRows(before)).toEqual([
      ['admin', 'change portal permissions', 'incoming user', 'consumer', 'granted put, rename; revoked mtime'],
    ]);
    const after = await admin.get(r.location!);
    expect(after.text).toContain('Permissions saved.');
    expect(after.text).toMatch(/value="rename" checked=""/);
  });

  it('refuses a post without the CSRF token, or an unknown operation, and changes nothing', async () => {
    const before = await h.ports.repos.portal.permissions('consumer');
    const forged = await admin.request('POST', `${PAGE}/permissions`, { operation: 'delete' });
    expect(forged.status).toBe(403);
    const unknown = await admin.submit(PAGE, `${PAGE}/permissions`, { operation: ['dir', 'chmod'] });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('Unknown portal operation &#39;chmod&#39;');
    expect(await h.ports.repos.portal.permissions('consumer')).toEqual(before);
  });

  it('warns when none is left: the user cannot log in', async () => {
    expect((await admin.submit('/console/incoming/open', '/console/incoming/open/permissions', {})).status).toBe(303);
    expect(await h.ports.repos.portal.permissions('open')).toEqual([]);
    expect((await admin.get('/console/incoming/open')).text).toContain('No permission: the user cannot log in');
  });
});

describe('options', () => {
  it('sets and removes an option, audited', async () => {
    const before = (await trail()).length;
    const set = await admin.submit(PAGE, `${PAGE}/options`, {
      name: 'portal.getPathPermRegex',
      value: ' MO_EXETER/.* ',
      action: 'set',
    });
    expect([set.status, set.location]).toEqual([303, `${PAGE}?done=option#options`]);
    const removed = await admin.submit(PAGE, `${PAGE}/options`, { name: 'portal.maxConnections', action: 'remove' });
    expect(removed.status).toBe(303);
    expect(await h.ports.repos.portal.options('consumer')).toEqual({ 'portal.getPathPermRegex': 'MO_EXETER/.*' });
    expect(await newRows(before)).toEqual([
      ['admin', 'remove portal option', 'incoming user', 'consumer', 'portal.maxConnections'],
      ['admin', 'set portal option', 'incoming user', 'consumer', 'portal.getPathPermRegex=MO_EXETER/.*'],
    ]);
  });

  it('refuses a bad value in its row, keeping what was typed, and stores nothing', async () => {
    const before = (await trail()).length;
    const r = await admin.submit(PAGE, `${PAGE}/options`, {
      name: 'portal.maxDownloadBytes',
      value: '10 GB',
      action: 'set',
    });
    expect(r.status).toBe(400);
    expect(r.text).toContain('portal.maxDownloadBytes was not saved: see below');
    const row = /<tr id="option-\d+" class="refused">[\s\S]*?<\/tr>/.exec(r.text)?.[0] ?? '';
    expect(row).toContain('<code>portal.maxDownloadBytes</code>');
    expect(row).toContain('value="10 GB"');
    expect(row).toContain('aria-invalid="true"');
    expect(row).toContain(
      'Invalid value for portal.maxDownloadBytes: &#39;10 GB&#39; (bytes, a whole number expected)',
    );
    const unknown = await admin.submit(PAGE, `${PAGE}/options`, { name: 'portal.colour', value: 'red', action: 'set' });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('Unknown portal option portal.colour');
    expect(await h.ports.repos.portal.options('consumer')).toEqual({ 'portal.getPathPermRegex': 'MO_EXETER/.*' });
    expect(await newRows(before)).toEqual([]);
  });

  it('shows a stored option this version does not know, which can only be removed', async () => {
    await h.ports.repos.portal.setOption('consumer', 'portal.legacyThing', 'x');
    const page = await admin.get(PAGE);
    expect(page.text).toContain('<code>portal.legacyThing</code>');
    expect(page.text).toContain('not an option of this version');
    expect(page.text).not.toContain('aria-label="Set portal.legacyThing"');
    const r = await admin.submit(PAGE, `${PAGE}/options`, { name: 'portal.legacyThing', action: 'remove' });
    expect(r.status).toBe(303);
    expect(await h.ports.repos.portal.options('consumer')).not.toHaveProperty('portal.legacyThing');
  });
});

describe('subscribers', () => {
  it('approves a verified subscriber: its password is mailed over SMTP and opens the portal; audited', async () => {
    const id = await subscriber('consumer', 'vera@example.org', 'Vera <b>V</b>');
    const page = await admin.get(PAGE);
    expect(page.text).toContain('Vera &lt;b&gt;V&lt;/b&gt;');
    expect(page.text).toContain(`aria-label="Approve subscriber ${id} (vera@example.org)"`);

    h.ports.mailer = mailerTo(smtp.url);
    const before = (await trail()).length;
    const r = await admin.submit(PAGE, `${PAGE}/subscribers/${id}/approve`);
    expect([r.status, r.location]).toEqual([303, `${PAGE}?done=approved#subscribers`]);
    expect(await statusOf(id)).toBe('active');
    const mail = await smtp.nextMailTo('vera@example.org');
    expect(mail.subject).toBe('Your access to the data portal of consumer');
    const password = passwordIn(mail)!;
    expect(await h.ports.repos.portal.activeSubscriberByPassword('consumer', sha256Base64(password))).toMatchObject({
      id,
    });
    expect(await newRows(before)).toEqual([
      ['admin', 'approve portal subscriber', 'incoming user', 'consumer', `subscriber ${id} <vera@example.org>`],
    ]);
    const text = JSON.stringify(await trail());
    expect(text).not.toContain(password);
    const after = await admin.get(r.location!);
    expect(after.text).toContain('Subscriber approved: its password was e-mailed to it.');
    expect(after.text).not.toContain(`aria-label="Approve subscriber ${id}`);
  });

  it('keeps a subscriber verified when its mail cannot go, and says so', async () => {
    const id = await subscriber('consumer', 'wanda@example.org');
    h.ports.mailer = mailerTo(`smtp://127.0.0.1:${await freePort()}`);
    const before = (await trail()).length;
    const r = await admin.submit(PAGE, `${PAGE}/subscribers/${id}/approve`);
    expect(r.status).toBe(400);
    expect(r.text).toContain('the e-mail with the password could not be sent; the subscriber waits for approval');
    expect(await statusOf(id)).toBe('verified');
    // The approval was committed before the mail was tried, and its undoing is recorded too.
    expect(await newRows(before)).toEqual([
      ['admin', 'approve portal subscriber undone', 'incoming user', 'consumer', 'the e-mail could not be sent'],
      ['admin', 'approve portal subscriber', 'incoming user', 'consumer', `subscriber ${id} <wanda@example.org>`],
    ]);

    h.ports.mailer = null;
    const none = await admin.submit(PAGE, `${PAGE}/subscribers/${id}/approve`);
    expect(none.status).toBe(400);
    expect(none.text).toContain('registration by e-mail is not configured on this server');
    expect(await statusOf(id)).toBe('verified');
  });

  it("revokes a subscriber, audited; never another user's", async () => {
    const id = await subscriber('consumer', 'xavier@example.org');
    const foreign = await subscriber('open', 'olga@example.org');
    const refused = await admin.submit(PAGE, `${PAGE}/subscribers/${foreign}/revoke`);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain(`Subscriber ${foreign} of incoming user consumer not found`);
    expect(await statusOf(foreign)).toBe('verified');

    const before = (await trail()).length;
    const r = await admin.submit(PAGE, `${PAGE}/subscribers/${id}/revoke`);
    expect([r.status, r.location]).toEqual([303, `${PAGE}?done=revoked#subscribers`]);
    expect(await statusOf(id)).toBe('revoked');
    expect(await newRows(before)).toEqual([
      ['admin', 'revoke portal subscriber', 'incoming user', 'consumer', `subscriber ${id} <xavier@example.org>`],
    ]);
    const page = await admin.get(PAGE);
    const row = new RegExp(`<tr id="subscriber-${id}">[\\s\\S]*?</tr>`).exec(page.text)?.[0] ?? '';
    expect(row).toContain('>revoked</span>');
    expect(row).not.toContain('<button');
    expect((await admin.submit(PAGE, `${PAGE}/subscribers/${id}/revoke`)).text).toContain('is already revoked');
  });

  it('a change to a user removed meanwhile answers its 404', async () => {
    const r = await admin.submit(PAGE, '/console/incoming/ghost/permissions', { operation: 'get' });
    expect(r.status).toBe(404);
    expect(r.text).toContain('No incoming user named ghost.');
  });
});
