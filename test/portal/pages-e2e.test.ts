import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { serve } from '@hono/node-server';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeConfig } from '../../functions/node/config.ts';
import { parseMail } from '../../functions/node/config.ts';
import { smtpMailer } from '../../functions/node/mail.ts';
import { loadTls } from '../../functions/node/tls.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { freePort } from '../support/processes.ts';
import { screenshotPath } from '../support/screenshots.ts';
import { linkIn, passwordIn, type SmtpReceiver, startSmtpReceiver } from '../support/servers/smtp.ts';
import { scaled } from '../support/time.ts';
import { needs } from '../support/tools.ts';
import { incomingUser } from './agent.ts';

/**
 * The portal's pages in headless Chromium, served over HTTPS from the harness's app, with a real
 * SMTP server: register → the link from the mail → log in with the mailed password → browse and
 * download → log out. The login and listing pages' screenshots (for the docs) go to
 * test/portal/portal-login.png and portal-listing.png.
 */
const CHROMIUM = '/usr/bin/chromium';

let h: Harness;
let smtp: SmtpReceiver;
let server: ReturnType<typeof serve>;
let base = '';
let context: BrowserContext;
let page: Page;
const temps: string[] = [];
const problems: string[] = [];
const tempDir = (prefix: string) => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  temps.push(dir);
  return dir;
};
const ARTIFACTS = path.resolve(import.meta.dirname, '../../test-artifacts/portal');
/** The pages as a phone shows them, for a look (git-ignored). */
const shot = (name: string) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
const heading = () => page.locator('main h1').innerText();
async function submit(click: () => Promise<void>) {
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), click()]);
}
const button = (name: string) => page.getByRole('button', { name, exact: true });
/** Nothing wider than the screen: the page reads on a phone without sideways scrolling. */
const fitsWidth = () =>
  page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth') as Promise<boolean>;

describe('the portal pages in headless Chromium', needs('chromium'), () => {
  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    smtp = await startSmtpReceiver();
    const sources = tempDir('ecpds-portal-e2e-src-');
    // The port first: the registration mails link to the portal's configured address.
    const port = await freePort();
    h = await createHarness({
      sourceRoots: [sources],
      mailer: smtpMailer(parseMail(smtp.url, 'portal@example.org')!),
      portalPages: { origin: `https://127.0.0.1:${port}` },
    });
    const admin = await h.client('admin', ['.*']);
    await h.addDestination('BROWSE');
    await incomingUser(h, admin, { id: 'team', mode: 'self-service', password: 'Team-Own-1', destination: 'BROWSE' });
    await incomingUser(h, admin, { id: 'public', mode: 'open-access', destination: 'BROWSE' });
    await h.ports.repos.portal.setOption('team', 'portal.registrationAutoApprove', 'true');
    for (const [target, text] of [
      ['forecasts/2026-11-27/t2m_00.grib', 'GRIB 2 metre temperature, 00 UTC'],
      ['forecasts/2026-11-27/t2m_12.grib', 'GRIB 2 metre temperature, 12 UTC'],
      ['README.txt', 'Forecast products of the BROWSE destination.'],
    ] as const) {
      const file = path.join(sources, target.replaceAll('/', '_'));
      fs.writeFileSync(file, `${text}\n`);
      const query = new URLSearchParams({ destination: 'BROWSE', source: file, target });
      expect((await h.call('GET', `/v1/datafile/put?${query}`, { auth: admin })).status).toBe(200);
    }

    const tls = await loadTls({ dataDir: tempDir('ecpds-portal-e2e-tls-') } as NodeConfig);
    server = await new Promise((resolve) => {
      const s = serve(
        { fetch: h.app.fetch, hostname: '127.0.0.1', port, createServer: https.createServer, serverOptions: tls },
        () => resolve(s),
      );
    });
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    context = await chromium.launchPersistentContext(tempDir('ecpds-portal-chromium-'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
      ignoreHTTPSErrors: true,
      viewport: { width: 390, height: 844 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => void (/Content Security Policy|Refused to/i.test(m.text()) && problems.push(m.text())));
    page.on('pageerror', (e) => void problems.push(`script error: ${e.message}`));
    page.on('request', (r) => void (new URL(r.url()).origin !== base && problems.push(`elsewhere: ${r.url()}`)));
  }, scaled(120_000));

  afterAll(async () => {
    await context?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    await h?.close();
    await smtp?.stop();
    for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('registers on a phone-sized screen, verifies from the mailed link and logs in with the mailed password', async () => {
    await page.goto(`${base}/portal/register?user=team`);
    expect(await heading()).toBe('Register');
    expect(await fitsWidth()).toBe(true);
    await page.fill('#name', 'Katherine Johnson');
    await page.fill('#email', 'katherine@example.org');
    await page.selectOption('#iso', 'us');
    await shot('01-register');
    await submit(() => button('Register').click());
    expect(await heading()).toBe('Check your mail');
    await shot('02-check-mail');

    const link = linkIn(await smtp.nextMailTo('katherine@example.org'))!;
    expect(link.startsWith(`${base}/portal/verify?token=`)).toBe(true);
    await page.goto(link);
    expect(await heading()).toBe('Confirm your registration');
    await submit(() => button('Confirm').click());
    expect(await heading()).toBe('Registration complete');
    await shot('03-verified');
    const password = passwordIn(await smtp.nextMailTo('katherine@example.org'))!;

    await submit(() => page.getByRole('link', { name: 'Log in' }).click());
    expect(new URL(page.url()).pathname).toBe('/portal/login');
    expect(await fitsWidth()).toBe(true);
    await page.fill('#login', 'team');
    await page.fill('#password', 'not the password');
    await submit(() => button('Log in').click());
    expect(await page.getByRole('alert').innerText()).toBe('Login failed');
    expect(await page.inputValue('#login')).toBe('team');
    await shot('04-login-failed');
    await page.fill('#password', password);
    await submit(() => button('Log in').click());
    expect(new URL(page.url()).pathname).toBe('/portal/data/');
    expect(await heading()).toBe('Data');
    await shot('05-logged-in');
    await submit(() => page.getByRole('link', { name: 'BROWSE/' }).click());
    await submit(() => page.getByRole('link', { name: 'forecasts/' }).click());
    await submit(() => page.getByRole('link', { name: '2026-11-27/' }).click());
    expect(await heading()).toBe('BROWSE/forecasts/2026-11-27/');
    expect(await page.getByRole('link', { name: 't2m_12.grib' }).getAttribute('href')).toBe('t2m_12.grib');
    const download = await page.request.get(`${base}/portal/data/BROWSE/forecasts/2026-11-27/t2m_12.grib`);
    expect(await download.text()).toBe('GRIB 2 metre temperature, 12 UTC\n');
    expect(await fitsWidth()).toBe(true);
    const cookie = (await context.cookies(`${base}/portal/data/`)).find((c) => c.name === 'ecpds_portal')!;
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Lax', path: '/portal' });

    // The mailed link is spent.
    await page.goto(link);
    expect(await heading()).toBe('This link is not valid');
    await shot('06-link-spent');
  });

  it('logs out, after which the files need a login again', async () => {
    await page.goto(`${base}/portal/data/`);
    await submit(() => button('Log out').click());
    expect(new URL(page.url()).pathname).toBe('/portal/logout');
    expect(await heading()).toBe('Logged out');
    expect((await context.cookies(`${base}/portal/data/`)).some((c) => c.name === 'ecpds_portal')).toBe(false);
    await page.goto(`${base}/portal/data/`);
    expect(`${new URL(page.url()).pathname}${new URL(page.url()).search}`).toBe(
      '/portal/login?next=%2Fportal%2Fdata%2F',
    );
  });

  it('sends an open-access user to its public files, and shows the login page for the docs', async () => {
    await page.goto(`${base}/portal/login`);
    await page.fill('#login', 'public');
    await page.fill('#password', 'anything');
    await submit(() => button('Log in').click());
    expect(new URL(page.url()).pathname).toBe('/portal/home/public/');
    expect(await page.getByRole('status').innerText()).toContain('open to everyone');
    await shot('07-open-access');

    await page.setViewportSize({ width: 900, height: 560 });
    await page.goto(`${base}/portal/login`);
    await page.screenshot({ path: screenshotPath(path.join(import.meta.dirname, 'portal-login.png')) });
    await page.goto(`${base}/portal/home/public/BROWSE/forecasts/2026-11-27/`);
    expect(await page.getByRole('link', { name: 't2m_00.grib' }).count()).toBe(1);
    await page.screenshot({ path: screenshotPath(path.join(import.meta.dirname, 'portal-listing.png')) });
    expect(problems).toEqual([]);
  });
});
