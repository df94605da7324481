import path from 'node:path';
import { eq } from 'drizzle-orm';
import { type Browser, type BrowserContext, type BrowserContextOptions, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { dataFiles } from '../../../db/schema.ts';
import { parseMail } from '../../../functions/node/config.ts';
import { smtpMailer } from '../../../functions/node/mail.ts';
import { screenshotPath } from '../../support/screenshots.ts';
import { type SmtpReceiver, startSmtpReceiver } from '../../support/servers/smtp.ts';
import { scaled } from '../../support/time.ts';
import { bytesOf, incomingUser, type PortalScene, portalScene, putFile } from '../support.ts';

/**
 * The portal's pages as consumers meet them, for the tests of test/portal/pages/: the harness's
 * app on real HTTPS, files of known sizes and times in a destination, and headless Chromium (the
 * system's, never a downloaded one). Every page opened is watched for what its policy refused, for
 * script errors and for requests to anywhere else.
 */
export const CHROMIUM = '/usr/bin/chromium';
export const READER = { login: 'reader', password: 'Reader-Pass-1' };
export const WIDE = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/** The files of BROWSE: their sizes and registration times (what the listing shows) are fixed. */
export const FILES = [
  { target: 'README.txt', size: 700, at: '2026-01-10T08:00:00Z' },
  // Three orders apart: by name, by size, by time.
  { target: 'forecasts/2026-11-27/msl_00.grib', size: 2_621_440, at: '2026-03-01T12:00:00Z' },
  { target: 'forecasts/2026-11-27/t2m_00.grib', size: 512, at: '2026-03-01T18:30:00Z' },
  { target: 'forecasts/2026-11-27/t2m_12.grib', size: 1536, at: '2026-03-01T06:00:00Z' },
  ...Array.from({ length: 12 }, (_, i) => ({
    target: `observations/station_${String(i + 1).padStart(2, '0')}.csv`,
    size: 100 + i,
    at: `2026-02-${String(i + 1).padStart(2, '0')}T12:00:00Z`,
  })),
];
export const FOLDER = '/portal/data/BROWSE/forecasts/2026-11-27/';

export interface PagesScene {
  s: PortalScene;
  base: string;
  browser: Browser;
  smtp: SmtpReceiver;
  /** A new browser (its own cookies) showing a page at this size; more options as playwright takes them. */
  open(options?: BrowserContextOptions): Promise<Page>;
  /** What the pages opened reported: refusals of their policy, script errors, requests elsewhere. */
  problems: string[];
  close(): Promise<void>;
}

export async function pagesScene(): Promise<PagesScene> {
  const smtp = await startSmtpReceiver();
  const s = await portalScene({
    mailer: smtpMailer(parseMail(smtp.url, 'portal@example.org')!),
    portalPages: { origin: 'https://portal.example.org' },
  });
  const { h, admin } = s;
  await h.addDestination('BROWSE');
  await incomingUser(h, admin, { ...READER, id: READER.login, grant: ['put'] }, ['BROWSE']);
  await incomingUser(h, admin, { id: 'public', mode: 'open-access' }, ['BROWSE']);
  await incomingUser(h, admin, { id: 'team', mode: 'self-service', password: 'Team-Own-1' }, ['BROWSE']);
  // Registered oldest first, as times go: the newest of a folder is its last registered (its data file's id).
  for (const [i, file] of [...FILES.entries()].sort(([, a], [, b]) => a.at.localeCompare(b.at))) {
    const { id } = await putFile(h, admin, s.sources, 'BROWSE', file.target, bytesOf(file.size, i + 1));
    await h.db
      .update(dataFiles)
      .set({ createdAt: new Date(file.at) })
      .where(eq(dataFiles.id, id));
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];
  return {
    s,
    base: s.url,
    browser,
    smtp,
    problems,
    async open(options = {}) {
      const context = await browser.newContext({
        ignoreHTTPSErrors: true,
        viewport: PHONE,
        locale: 'en-US',
        ...options,
      });
      contexts.push(context);
      const page = await context.newPage();
      page.on('console', (m) => void (/Content.Security.Policy|Refused to/i.test(m.text()) && problems.push(m.text())));
      page.on('pageerror', (e) => void problems.push(`script error: ${e.message}`));
      page.on('request', (r) => void (new URL(r.url()).origin !== s.url && problems.push(`elsewhere: ${r.url()}`)));
      return page;
    },
    async close() {
      for (const context of contexts) await context.close();
      await browser.close();
      await s.close();
      await smtp.stop();
    },
  };
}

/**
 * The scene of a test file: started before its tests (`pagesScene`), closed after them. The object
 * answered is filled in when the scene has started, for the tests to use.
 */
export function usePagesScene(): PagesScene {
  const scene = {} as PagesScene;
  beforeAll(async () => {
    Object.assign(scene, await pagesScene());
  }, scaled(120_000));
  afterAll(() => scene.close?.());
  return scene;
}

/** Logs this browser in through the login form (the reader by default); it ends on the destinations' root. */
export async function logIn(page: Page, base: string, who = READER) {
  await page.goto(`${base}/portal/login`);
  await page.fill('#login', who.login);
  await page.fill('#password', who.password);
  await submit(page, () => page.getByRole('button', { name: 'Log in', exact: true }).click());
  expect(new URL(page.url()).pathname).toBe('/portal/data/');
}

/** A click that loads another page, waited for. */
export async function submit(page: Page, click: () => Promise<void>) {
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), click()]);
}

export const heading = (page: Page) => page.locator('main h1').innerText();

/** Nothing wider than the screen: the page reads on a phone without sideways scrolling. */
export const fitsWidth = (page: Page) =>
  page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth') as Promise<boolean>;

/** The names of a listing's rows as shown, top to bottom (the `../` row left out). */
export const shownNames = (page: Page) =>
  page.locator('table.listing tbody tr:not(.up):visible td.name a').allInnerTexts();

/** A screenshot the repository keeps, next to the other portal screenshots (see screenshotPath). */
export const keep = (page: Page, name: string) =>
  page.screenshot({ path: screenshotPath(path.join(import.meta.dirname, '..', name)), fullPage: true });
