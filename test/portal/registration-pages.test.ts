import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveSubscriber } from '../../core/portal/registration.ts';
import { NAME_EXPECTED, REGISTRATION_LIMITS } from '../../core/portal/registration-rules.ts';
import type { Mailer } from '../../core/ports.ts';
import { portalSubscribers } from '../../db/schema.ts';
import { parseConfig, parseMail } from '../../functions/node/config.ts';
import { smtpMailer } from '../../functions/node/mail.ts';
import { nodeApp } from '../../functions/node/server.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { linkIn, passwordIn, type SmtpReceiver, startSmtpReceiver } from '../support/servers/smtp.ts';
import { Agent, incomingUser } from './agent.ts';

/**
 * Self-service registration through the portal's pages, on the suite's database, with a real SMTP
 * server receiving the mail: register → link → verify → password by mail → log in with it.
 */
let h: Harness;
let smtp: SmtpReceiver;
let mailer: Mailer;
let admin: string;
const FROM = 'Data Portal <portal@example.org>';
const LIMITS = { ...REGISTRATION_LIMITS, perAddress: 4, perEmail: 3 };

beforeAll(async () => {
  smtp = await startSmtpReceiver();
  mailer = smtpMailer(parseMail(smtp.url, FROM)!);
  h = await createHarness({
    mailer,
    portalPages: { registrationLimits: LIMITS },
  });
  admin = await h.client('admin', ['.*']);
  await h.addDestination('REG');
  for (const id of ['auto', 'manual', 'asleep', 'fixed', 'flaky', 'extra']) {
    await incomingUser(h, admin, {
      id,
      mode: id === 'fixed' ? 'standard-login' : 'self-service',
      password: `${id}-Own-Pass-1`,
      active: id !== 'asleep',
      destination: 'REG',
    });
  }
  await h.ports.repos.portal.setOption('auto', 'portal.registrationAutoApprove', 'true');
});
afterAll(async () => {
  await h?.close();
  await smtp?.stop();
});

const register = (agent: Agent, user: string, fields: { name?: string; email: string; iso?: string }) =>
  agent.submit(`/portal/register?user=${encodeURIComponent(user)}`, '/portal/register', {
    user,
    name: fields.name ?? 'Ada Lovelace',
    email: fields.email,
    iso: fields.iso ?? 'gb',
  });
/** The path and query of the mailed link, for the in-process app. */
const pathOf = (link: string | null) => {
  expect(link).toMatch(/^https:\/\/localhost\/portal\/verify\?token=[\w-]{43}$/);
  const url = new URL(link!);
  return `${url.pathname}${url.search}`;
};
/** Opens a mailed link, then confirms on the page it shows (a form posting the token). */
async function confirm(agent: Agent, path: string) {
  const page = await agent.get(path);
  if (page.status !== 200) return page;
  expect(heading(page)).toBe('Confirm your registration');
  const token = new URL(`https://localhost${path}`).searchParams.get('token')!;
  return agent.request('POST', '/portal/verify', { csrf: page.csrf!, token });
}
const subscribersWith = (email: string) =>
  h.db.select().from(portalSubscribers).where(eq(portalSubscribers.email, email));
const withClock = async <T>(at: Date, work: () => Promise<T>) => {
  const clock = h.ports.clock;
  h.ports.clock = () => at;
  try {
    return await work();
  } finally {
    h.ports.clock = clock;
  }
};
const heading = (page: { text: string }) => /<h1>([^<]*)<\/h1>/.exec(page.text)?.[1];
const alert = (page: { text: string }) => /role="alert">([^<]*)</.exec(page.text)?.[1];

describe('the registration page', () => {
  it('asks for a name, an e-mail and a country from the countries table, with a form token', async () => {
    const page = await new Agent(h.app).get('/portal/register?user=auto');
    expect(page.status).toBe(200);
    expect(page.text).toContain('name="name"');
    expect(page.text).toContain('type="email"');
    expect(page.text).toContain('<option value="gb">United Kingdom</option>');
    expect(page.text).toContain('<option value="fr">France</option>');
    expect(page.csrf).toMatch(/^[\w-]{43}$/);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.setCookies.join()).toMatch(/ecpds_portal_form=.*HttpOnly; Secure; SameSite=Strict/);
  });

  it('shows the same form for any id, telling no one which users exist', async () => {
    const agent = new Agent(h.app);
    const forms = await Promise.all(['auto', 'nobody', 'fixed'].map((u) => agent.get(`/portal/register?user=${u}`)));
    expect(forms.map((f) => f.status)).toEqual([200, 200, 200]);
    expect((await agent.get('/portal/register')).status).toBe(400);
  });
});

describe('registration with auto-approval', () => {
  let password = '';
  it('mails a single-use link, which activates the subscriber and mails its password', async () => {
    const agent = new Agent(h.app);
    const registered = await register(agent, 'auto', {
      email: 'ada@example.org',
      name: 'Ada Lovelace',
    });
    expect([registered.status, heading(registered)]).toEqual([200, 'Check your mail']);
    expect(registered.text).toContain('ada@example.org');

    const linkMail = await smtp.nextMailTo('ada@example.org');
    expect(linkMail.user).toBe('mailer');
    expect(linkMail.from).toBe('portal@example.org');
    expect(linkMail.parsed.from?.text).toBe(FROM.replace('Data Portal', '"Data Portal"'));
    expect(linkMail.subject).toBe('Confirm your registration to auto');
    expect(linkMail.text).toContain('Hello Ada Lovelace');
    const verifyPath = pathOf(linkIn(linkMail));
    const [stored] = await subscribersWith('ada@example.org');
    expect(stored).toMatchObject({ status: 'unverified', passwordHash: null });
    // Only the token's hash is stored, never the token.
    expect(stored!.tokenHash).not.toContain(verifyPath.split('token=')[1]);

    const verified = await confirm(agent, verifyPath);
    expect([verified.status, heading(verified)]).toEqual([200, 'Registration complete']);
    expect(verified.text).toContain('Your password was mailed to you');
    const passwordMail = await smtp.nextMailTo('ada@example.org');
    expect(passwordMail.subject).toBe('Your access to the data portal of auto');
    password = passwordIn(passwordMail)!;
    expect(password).toMatch(/^[A-Za-z0-9]{24}$/);
    expect(passwordMail.text).toContain('login:    auto');

    const reused = await confirm(agent, verifyPath);
    expect([reused.status, heading(reused)]).toEqual([400, 'This link is not valid']);
  });

  it('lets the subscriber log in with the user id and the mailed password', async () => {
    const agent = new Agent(h.app);
    const login = await agent.login('auto', password);
    expect([login.status, login.location]).toEqual([303, '/portal/data/']);
    expect(agent.sessionKey()).not.toBeNull();
    const session = await h.ports.repos.portal.session(agent.sessionKey()!);
    const [subscriber] = await subscribersWith('ada@example.org');
    expect(session).toMatchObject({
      userId: 'auto',
      subscriberId: subscriber!.id,
    });
  });

  it("never takes the self-service user's own password", async () => {
    const agent = new Agent(h.app);
    const refused = await agent.login('auto', 'auto-Own-Pass-1');
    expect([refused.status, alert(refused)]).toEqual([401, 'Login failed']);
    expect(agent.sessionKey()).toBeNull();
    expect(h.events.at(-1)).toMatch(/^DEA;.*Subscriber password authentication failed/);
  });
});

describe('registration waiting for approval', () => {
  it('verifies the address, and an approval mails the password', async () => {
    const agent = new Agent(h.app);
    expect(
      (
        await register(agent, 'manual', {
          email: 'grace@example.org',
          name: 'Grace Hopper',
        })
      ).status,
    ).toBe(200);
    const verified = await confirm(agent, pathOf(linkIn(await smtp.nextMailTo('grace@example.org'))));
    expect([verified.status, heading(verified)]).toEqual([200, 'Waiting for approval']);
    const [waiting] = await subscribersWith('grace@example.org');
    expect(waiting).toMatchObject({ status: 'verified', tokenHash: null });
    const mailsBefore = smtp.received.length;
    expect((await agent.login('manual', 'anything')).status).toBe(401);
    expect(smtp.received.length).toBe(mailsBefore);

    await approveSubscriber(h.ports, waiting!.id);
    const password = passwordIn(await smtp.nextMailTo('grace@example.org'))!;
    const login = await agent.login('manual', password);
    expect([login.status, login.location]).toEqual([303, '/portal/data/']);
  });
});

describe('a refused registration', () => {
  it('gives one message for an unknown, inactive or not self-service user, and mails nothing', async () => {
    const before = smtp.received.length;
    for (const user of ['nobody', 'asleep', 'fixed']) {
      const page = await register(new Agent(h.app), user, {
        email: `someone-${user}@example.org`,
      });
      expect([page.status, alert(page)], user).toEqual([400, 'Registration is not open for this user']);
      expect(await subscribersWith(`someone-${user}@example.org`)).toEqual([]);
    }
    expect(smtp.received.length).toBe(before);
  });

  it('says an e-mail is registered already, whatever its case, and keeps what was typed', async () => {
    const agent = new Agent(h.app);
    expect((await register(agent, 'auto', { email: 'twice@example.org' })).status).toBe(200);
    await smtp.nextMailTo('twice@example.org');
    const again = await register(agent, 'auto', {
      email: 'Twice@Example.org',
      name: 'Second Try',
    });
    expect([again.status, alert(again)]).toEqual([409, 'This e-mail address is already registered']);
    expect(again.text).toContain('value="Second Try"');
    expect(again.text).toContain('<option value="gb" selected="">');
    // The same address may register to another self-service user.
    expect((await register(agent, 'manual', { email: 'twice@example.org' })).status).toBe(200);
    await smtp.nextMailTo('twice@example.org');
  });

  it('refuses a name with a line break or other control character', async () => {
    const page = await register(new Agent(h.app), 'auto', {
      email: 'crlf@example.org',
      name: 'Eve\r\nBcc: x@example.org',
    });
    expect([page.status, alert(page)]).toEqual([400, NAME_EXPECTED]);
    expect(await subscribersWith('crlf@example.org')).toEqual([]);
  });

  it('refuses an address that an address parser could read as several recipients', async () => {
    for (const email of ['victim<attacker@example.org>', 'a,b@example.org', 'a b@example.org']) {
      const page = await register(new Agent(h.app), 'auto', { email });
      expect([page.status, alert(page)], email).toEqual([400, 'An e-mail address expected']);
    }
  });

  it('refuses a link once it has expired, after 24 hours, and lets the address register again', async () => {
    const agent = new Agent(h.app);
    const start = new Date();
    await withClock(start, () => register(agent, 'auto', { email: 'late@example.org' }));
    const verifyPath = pathOf(linkIn(await smtp.nextMailTo('late@example.org')));
    const late = await withClock(new Date(start.getTime() + 24 * 3600_000 + 1000), () => confirm(agent, verifyPath));
    expect([late.status, heading(late)]).toEqual([400, 'This link is not valid']);
    expect((await subscribersWith('late@example.org'))[0]).toMatchObject({
      status: 'unverified',
    });
    // Until the link lapsed the address is taken; then it may register again, with a new link.
    const taken = await withClock(new Date(start.getTime() + 3600_000), () =>
      register(agent, 'auto', { email: 'late@example.org' }),
    );
    expect(taken.status).toBe(409);
    const again = await withClock(new Date(start.getTime() + 25 * 3600_000), () =>
      register(agent, 'auto', { email: 'late@example.org' }),
    );
    expect(again.status).toBe(200);
    const renewed = pathOf(linkIn(await smtp.nextMailTo('late@example.org')));
    expect(renewed).not.toBe(verifyPath);
    expect((await confirm(agent, verifyPath)).status).toBe(400);
    expect(heading(await confirm(agent, renewed))).toBe('Registration complete');
    await smtp.nextMailTo('late@example.org');
    expect((await agent.get('/portal/verify?token=not-a-token')).status).toBe(400);
    expect((await agent.get('/portal/verify')).status).toBe(400);
  });

  it('leaves nothing behind when the SMTP server refuses or is down, and the address can register again', async () => {
    const agent = new Agent(h.app);
    smtp.refuse = true;
    const refused = await register(agent, 'flaky', {
      email: 'flaky@example.org',
    }).finally(() => {
      smtp.refuse = false;
    });
    expect([refused.status, alert(refused)]).toEqual([
      503,
      'The verification e-mail could not be sent; try again later',
    ]);
    expect(await subscribersWith('flaky@example.org')).toEqual([]);

    const down = smtpMailer(parseMail(`smtp://mailer:x@127.0.0.1:${await closedPort()}`, FROM)!);
    h.ports.mailer = down;
    const unreachable = await register(agent, 'flaky', {
      email: 'flaky@example.org',
    }).finally(() => {
      h.ports.mailer = mailer;
    });
    expect(unreachable.status).toBe(503);
    expect(await subscribersWith('flaky@example.org')).toEqual([]);
    expect(h.logLines.join('\n')).not.toContain('p@ss');

    expect((await register(agent, 'flaky', { email: 'flaky@example.org' })).status).toBe(200);
    expect(linkIn(await smtp.nextMailTo('flaky@example.org'))).toBeTruthy();
  });

  it('leaves a subscriber verified, for an operator, when the mail with its password cannot be sent', async () => {
    const agent = new Agent(h.app);
    expect((await register(agent, 'auto', { email: 'unlucky@example.org' })).status).toBe(200);
    const verifyPath = pathOf(linkIn(await smtp.nextMailTo('unlucky@example.org')));
    smtp.refuse = true;
    const verified = await confirm(agent, verifyPath).finally(() => {
      smtp.refuse = false;
    });
    expect([verified.status, heading(verified)]).toEqual([503, 'Waiting for approval']);
    const [waiting] = await subscribersWith('unlucky@example.org');
    expect(waiting).toMatchObject({
      status: 'verified',
      passwordHash: null,
      tokenHash: null,
    });
    await approveSubscriber(h.ports, waiting!.id);
    expect(passwordIn(await smtp.nextMailTo('unlucky@example.org'))).toMatch(/^[A-Za-z0-9]{24}$/);
  });

  it('says registration is unavailable without SMTP configured', async () => {
    const agent = new Agent(h.app);
    const form = await agent.get('/portal/register?user=auto');
    h.ports.mailer = null;
    try {
      const page = await agent.get('/portal/register?user=auto');
      expect([page.status, heading(page)]).toEqual([503, 'Registration is unavailable']);
      const posted = await agent.request('POST', '/portal/register', {
        csrf: form.csrf!,
        user: 'auto',
        name: 'N',
        email: 'nosmtp@example.org',
        iso: 'gb',
      });
      expect([posted.status, heading(posted)]).toEqual([503, 'Registration is unavailable']);
      expect(await subscribersWith('nosmtp@example.org')).toEqual([]);
    } finally {
      h.ports.mailer = mailer;
    }
  });

  it('refuses a post without the form token of its own browser', async () => {
    const agent = new Agent(h.app);
    const fields = {
      user: 'auto',
      name: 'N',
      email: 'forged@example.org',
      iso: 'gb',
    };
    expect((await agent.request('POST', '/portal/register', fields)).status).toBe(403);
    // A token from another browser's page does not match this browser's cookie.
    const other = await new Agent(h.app).get('/portal/register?user=auto');
    await agent.get('/portal/register?user=auto');
    expect(
      (
        await agent.request('POST', '/portal/register', {
          ...fields,
          csrf: other.csrf!,
        })
      ).status,
    ).toBe(403);
    expect(await subscribersWith('forged@example.org')).toEqual([]);
  });
});

describe('the links of registration mails', () => {
  /** A browser of `app` that reaches it under `host` (the Host header a forged request names). */
  async function registerAt(app: { request: Hono['request'] }, host: string, email: string, formApp = app) {
    const form = await formApp.request(`https://${host}/portal/register?user=auto`);
    const cookie = form.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
    const body = new URLSearchParams({ csrf, user: 'auto', name: 'Ada Lovelace', email, iso: 'gb' });
    const headers = { cookie, 'content-type': 'application/x-www-form-urlencoded' };
    return app.request(`https://${host}/portal/register`, { method: 'POST', body, headers });
  }
  const dataDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-register-'));

  it('start with the configured public address (ECPDS_PORTAL_URL), whatever Host the request names', async () => {
    const env = {
      ECPDS_DATA_DIR: dataDir(),
      ECPDS_SMTP_URL: smtp.url,
      ECPDS_MAIL_FROM: FROM,
    };
    const app = nodeApp(parseConfig({ ...env, ECPDS_PORTAL_URL: 'https://data.example.org/' }), h.ports);
    const registered = await registerAt(app, 'evil.example', 'forged-host@example.org');
    expect(registered.status).toBe(200);
    const mail = await smtp.nextMailTo('forged-host@example.org');
    expect(linkIn(mail)).toMatch(/^https:\/\/data\.example\.org\/portal\/verify\?token=[\w-]{43}$/);
    expect(mail.text).not.toContain('evil.example');
  });

  it('need the public address: registration is unavailable without it, mail or not', async () => {
    const app = nodeApp(parseConfig({ ECPDS_DATA_DIR: dataDir() }), h.ports);
    expect(h.ports.mailer).not.toBeNull();
    const form = await app.request('https://evil.example/portal/register?user=auto');
    expect(form.status).toBe(503);
    expect(await form.text()).toContain('not configured with its public address');
    const before = smtp.received.length;
    // A form token of the same secret (from a server that shows the form) does not get past it either.
    expect((await registerAt(app, 'evil.example', 'no-origin@example.org', h.app)).status).toBe(503);
    expect(await subscribersWith('no-origin@example.org')).toEqual([]);
    expect(smtp.received.length).toBe(before);
  });
});

describe('the verification link', () => {
  it('opens a page that confirms with a POST: opening the link (a mail scanner) uses nothing up', async () => {
    const agent = new Agent(h.app);
    expect((await register(agent, 'auto', { email: 'scanned@example.org' })).status).toBe(200);
    const verifyPath = pathOf(linkIn(await smtp.nextMailTo('scanned@example.org')));
    for (const scanner of [new Agent(h.app), new Agent(h.app)]) {
      const page = await scanner.get(verifyPath);
      expect([page.status, heading(page)]).toEqual([200, 'Confirm your registration']);
      expect(page.text).toMatch(/<form method="post" action="\/portal\/verify">/);
    }
    expect((await subscribersWith('scanned@example.org'))[0]).toMatchObject({
      status: 'unverified',
    });
    // A post without this browser's form token (another site's form) changes nothing either.
    const token = new URL(`https://localhost${verifyPath}`).searchParams.get('token')!;
    expect((await new Agent(h.app).request('POST', '/portal/verify', { token })).status).toBe(403);
    expect((await subscribersWith('scanned@example.org'))[0]).toMatchObject({
      status: 'unverified',
    });
    const confirmed = await confirm(agent, verifyPath);
    expect([confirmed.status, heading(confirmed)]).toEqual([200, 'Registration complete']);
    expect((await subscribersWith('scanned@example.org'))[0]).toMatchObject({
      status: 'active',
    });
    expect(passwordIn(await smtp.nextMailTo('scanned@example.org'))).toMatch(/^[A-Za-z0-9]{24}$/);
  });
});

describe('what a registration may put into a mail', () => {
  it('refuses names with links, markup or invisible characters, and mails nothing', async () => {
    const before = smtp.received.length;
    const names = [
      'Visit https://evil.example now',
      'Ada evil.example',
      'Ada www.evil',
      'Ada <a href="x">',
      'Ada mailto:eve@evil.example',
      'Ada\u202eecalevoL',
      'Ada\u200bLovelace',
    ];
    for (const [i, name] of names.entries()) {
      const email = `linked-${i}@example.org`;
      const page = await register(new Agent(h.app), 'auto', { email, name });
      expect([page.status, alert(page)], name).toEqual([400, NAME_EXPECTED]);
      expect(await subscribersWith(email)).toEqual([]);
    }
    expect(smtp.received.length).toBe(before);
  });

  it('takes the names people have, as typed', async () => {
    for (const [i, name] of ['J. R. R. Tolkien', "Zoë O'Brien-Núñez", 'Kim, Jong-un (Dr.)', '王小明'].entries()) {
      const email = `named-${i}@example.org`;
      expect((await register(new Agent(h.app), 'manual', { email, name })).status, name).toBe(200);
      expect((await smtp.nextMailTo(email)).text).toContain(`Hello ${name},`);
    }
  });
});

describe('the limits of registrations', () => {
  it('mails an e-mail address at most perEmail times a day, whichever users it registers to', async () => {
    const email = 'flooded@example.org';
    const start = new Date(Date.now() + 40 * 24 * 3600_000);
    const users = ['auto', 'manual', 'flaky', 'extra'];
    const pages = [];
    for (const user of users) {
      pages.push(await withClock(start, () => register(new Agent(h.app), user, { email })));
    }
    expect(pages.map((p) => p.status)).toEqual([200, 200, 200, 429]);
    expect(alert(pages[3]!)).toBe('Too many registrations from this e-mail address; try again later');
    expect(Number(pages[3]!.headers.get('retry-after'))).toBeGreaterThan(23 * 3600);
    for (const _ of users.slice(0, 3)) await smtp.nextMailTo(email);
    await expect(smtp.nextMailTo(email, 500)).rejects.toThrow();
    expect((await subscribersWith(email)).map((s) => s.userId).sort()).toEqual(['auto', 'flaky', 'manual']);
    // A day on, it may be mailed again.
    const later = await withClock(new Date(start.getTime() + 24 * 3600_000 + 1000), () =>
      register(new Agent(h.app), 'extra', { email }),
    );
    expect(later.status).toBe(200);
    await smtp.nextMailTo(email);
  });

  it('mails from one client address at most perAddress registrations an hour', async () => {
    const start = new Date(Date.now() + 80 * 24 * 3600_000);
    const agent = new Agent(h.app, 'one-office');
    const emails = Array.from({ length: LIMITS.perAddress + 2 }, (_, i) => `office-${i}@example.org`);
    const pages = [];
    for (const email of emails) pages.push(await withClock(start, () => register(agent, 'auto', { email })));
    expect(pages.map((p) => p.status)).toEqual([...Array(LIMITS.perAddress).fill(200), 429, 429]);
    expect(alert(pages.at(-1)!)).toBe('Too many registrations from your network address; try again later');
    for (const email of emails.slice(0, LIMITS.perAddress)) await smtp.nextMailTo(email);
    for (const email of emails.slice(LIMITS.perAddress)) expect(await subscribersWith(email)).toEqual([]);
    // Other addresses are not held back by it, and this one registers again an hour on.
    const nextDoor = await withClock(start, () =>
      register(new Agent(h.app), 'auto', { email: 'next-door@example.org' }),
    );
    expect(nextDoor.status).toBe(200);
    await smtp.nextMailTo('next-door@example.org');
    const later = await withClock(new Date(start.getTime() + 3600_000 + 1000), () =>
      register(agent, 'auto', { email: 'office-later@example.org' }),
    );
    expect(later.status).toBe(200);
    await smtp.nextMailTo('office-later@example.org');
  });

  it('never lets one too many through when registrations from one address arrive at once', async () => {
    const start = new Date(Date.now() + 120 * 24 * 3600_000);
    const agent = new Agent(h.app, 'burst');
    // The form's cookie first, as a browser's tabs share it.
    await agent.get('/portal/register?user=auto');
    const before = smtp.received.length;
    const emails = Array.from({ length: 12 }, (_, i) => `burst-${i}@example.org`);
    const pages = await withClock(start, () => Promise.all(emails.map((email) => register(agent, 'auto', { email }))));
    const accepted = emails.filter((_, i) => pages[i]!.status === 200);
    expect(accepted.length).toBeLessThanOrEqual(LIMITS.perAddress);
    expect(pages.filter((p) => p.status !== 200).map((p) => p.status)).toEqual(
      Array(emails.length - accepted.length).fill(429),
    );
    for (const email of accepted) await smtp.nextMailTo(email);
    // A mail is sent before its page answers: only the accepted ones were, and only they are stored.
    expect(smtp.received.length - before).toBe(accepted.length);
    for (const email of emails.filter((e) => !accepted.includes(e))) expect(await subscribersWith(email)).toEqual([]);
  });
});

async function closedPort() {
  const net = await import('node:net');
  return new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as import('node:net').AddressInfo;
      s.close(() => resolve(port));
    });
  });
}
