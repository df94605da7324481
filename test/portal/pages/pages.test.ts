import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { needs } from '../../support/tools.ts';
import { Agent } from '../agent.ts';
import {
  FOLDER,
  fitsWidth,
  heading,
  keep,
  logIn,
  PHONE,
  READER,
  shownNames,
  submit,
  usePagesScene,
  WIDE,
} from './support.ts';

/**
 * The portal's ways in and out in Chromium (its start, logging out, a page not found) and every
 * page checked by axe-core at 1280 and 390 px and used from the keyboard alone. Screenshots:
 * test/portal/portal-not-found-390.png and portal-logged-out-390.png.
 */
const scene = usePagesScene();

const where = (page: Page) => `${new URL(page.url()).pathname}${new URL(page.url()).search}`;
const hasSession = async (page: Page) =>
  (await page.context().cookies(scene.base)).some((c) => c.name === 'ecpds_portal');

describe('the ways in and out', needs('chromium'), () => {
  it('leads from /portal/ to the login, then to the files', async () => {
    const page = await scene.open();
    for (const start of ['/portal/', '/portal']) {
      await page.goto(`${scene.base}${start}`);
      expect(where(page), start).toBe('/portal/login?next=%2Fportal%2Fdata%2F');
      expect(await heading(page)).toBe('Log in');
    }
    await logIn(page, scene.base);
    await page.goto(`${scene.base}/portal/`);
    expect([where(page), await heading(page)]).toEqual(['/portal/data/', 'Data']);
    // The header's name of the portal leads there too.
    await page.goto(`${scene.base}${FOLDER}`);
    await submit(page, () => page.getByRole('link', { name: 'Data Portal' }).click());
    expect(where(page)).toBe('/portal/data/');
  });

  it('logs out with GET /portal/logout, on a page that says so', async () => {
    const page = await scene.open();
    await logIn(page, scene.base);
    const response = await page.goto(`${scene.base}/portal/logout`);
    expect(response?.status()).toBe(200);
    expect(await heading(page)).toBe('Logged out');
    expect(await page.getByRole('status').innerText()).toBe('You are logged out of the Data Portal.');
    expect(await hasSession(page)).toBe(false);
    expect(await fitsWidth(page)).toBe(true);
    await keep(page, 'portal-logged-out-390.png');
    await page.goto(`${scene.base}/portal/data/`);
    expect(where(page)).toBe('/portal/login?next=%2Fportal%2Fdata%2F');
    await page.goto(`${scene.base}/portal/logout`);
    expect(await heading(page)).toBe('Logged out');
    await submit(page, () => page.getByRole('link', { name: 'Log in again' }).click());
    expect(await heading(page)).toBe('Log in');
  });

  it("logs out from the header's button, which ends on the same page", async () => {
    const page = await scene.open({ viewport: WIDE });
    await logIn(page, scene.base);
    await submit(page, () => page.getByRole('button', { name: 'Log out', exact: true }).click());
    expect([where(page), await heading(page)]).toEqual(['/portal/logout', 'Logged out']);
    expect(await hasSession(page)).toBe(false);
  });

  it('asks first when another site sent the browser to log out', async () => {
    const agent = new Agent(scene.s.h.app);
    expect((await agent.login(READER.login, READER.password)).status).toBe(303);
    const key = agent.sessionKey()!;
    const asked = await agent.request('GET', '/portal/logout', undefined, { 'sec-fetch-site': 'cross-site' });
    expect([asked.status, asked.text]).toEqual([200, expect.stringContaining('Another site sent you here.')]);
    expect(asked.text).toContain('<a href="/portal/logout">Log out</a>');
    expect(await scene.s.h.ports.repos.portal.session(key)).not.toBeNull();
    const out = await agent.request('GET', '/portal/logout', undefined, { 'sec-fetch-site': 'same-origin' });
    expect(out.text).toContain('You are logged out');
    expect(await scene.s.h.ports.repos.portal.session(key)).toBeNull();
    expect(agent.jar.has('ecpds_portal')).toBe(false);
  });

  it('shows a browser a page not found with the way back; tools keep the plain answer', async () => {
    const page = await scene.open();
    await logIn(page, scene.base);
    const missing = await page.goto(`${scene.base}/portal/data/BROWSE/forecasts/nothing.grib`);
    expect(missing?.status()).toBe(404);
    expect(missing?.headers()['content-security-policy']).toContain("default-src 'none'");
    expect(await heading(page)).toBe('Not found');
    expect(await fitsWidth(page)).toBe(true);
    await keep(page, 'portal-not-found-390.png');
    await submit(page, () => page.getByRole('link', { name: 'Up to /portal/data/BROWSE/forecasts/' }).click());
    expect(await heading(page)).toBe('BROWSE/forecasts/');

    for (const path of ['/portal/nowhere', '/portal/data/ELSEWHERE/', '/portal/data/BROWSE/no/such/folder/']) {
      expect((await page.goto(`${scene.base}${path}`))?.status(), path).toBe(404);
      expect(await heading(page), path).toBe('Not found');
    }
    await submit(page, () => page.getByRole('link', { name: 'Back to the start' }).click());
    expect(where(page)).toBe('/portal/data/');
    const tool = await page.request.get(`${scene.base}/portal/data/BROWSE/nothing.grib`, {
      headers: { accept: '*/*' },
    });
    expect([tool.status(), await tool.text()]).toEqual([404, 'Not found']);
    expect(scene.problems).toEqual([]);
  });
});

const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** What axe-core finds wrong with the page as it is now: `rule: element, ...` per rule broken. */
async function violations(page: Page): Promise<string[]> {
  // Evaluated through the debugging protocol, which the page's policy does not govern.
  await page.evaluate(AXE);
  // In the page's own terms (a string: the tests are compiled without the DOM's types).
  const { broken, passed } = (await page.evaluate(`axe.run(document).then((result) => ({
    broken: result.violations.map((v) =>
      v.id + ': ' + v.nodes.map((n) => n.target.join(' ') + ' (' + n.failureSummary + ')').join('; ')),
    passed: result.passes.length,
  }))`)) as { broken: string[]; passed: number };
  // axe did check the page: the rules that apply to any page (a title, a language, landmarks...) passed.
  expect(passed).toBeGreaterThan(10);
  return broken;
}

describe('every page, by axe-core and the keyboard', needs('chromium'), () => {
  it('passes axe-core on a wide screen and on a phone', async () => {
    for (const viewport of [WIDE, PHONE]) {
      const anonymous = await scene.open({ viewport });
      const reader = await scene.open({ viewport });
      await logIn(reader, scene.base);
      const visits: Array<[Page, string]> = [
        [anonymous, '/portal/login'],
        [anonymous, '/portal/register?user=team'],
        [anonymous, '/portal/nowhere'],
        [anonymous, '/portal/logout'],
        [reader, '/portal/data/'],
        [reader, '/portal/data/BROWSE/'],
        [reader, '/portal/data/BROWSE/observations/'],
        [reader, FOLDER],
        [reader, '/portal/data/BROWSE/no-such-file'],
        [reader, '/portal/logout'],
      ];
      for (const [page, path] of visits) {
        await page.goto(`${scene.base}${path}`);
        expect(await violations(page), `${path} at ${viewport.width}px`).toEqual([]);
        expect(await fitsWidth(page), `${path} at ${viewport.width}px`).toBe(true);
      }
    }
    expect(scene.problems).toEqual([]);
  });

  it('sorts, filters and reaches the upload form from the keyboard', async () => {
    const page = await scene.open({ viewport: WIDE });
    await logIn(page, scene.base);
    await page.goto(`${scene.base}${FOLDER}`);
    await tabTo(page, 'th[data-sort="size"] button');
    await page.keyboard.press('Enter');
    expect(await shownNames(page)).toEqual(['t2m_00.grib', 't2m_12.grib', 'msl_00.grib']);
    await page.keyboard.press('Space');
    expect(await shownNames(page)).toEqual(['msl_00.grib', 't2m_12.grib', 't2m_00.grib']);
    await tabTo(page, '#upload-file');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('Upload');

    await page.goto(`${scene.base}/portal/data/BROWSE/observations/`);
    await tabTo(page, '#filter');
    await page.keyboard.type('station_0');
    expect(await shownNames(page)).toHaveLength(9);
    // From the filter on to the table's headers, then its rows still shown.
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('Name');
    await tabTo(page, 'tbody a');
    expect(await focused(page)).toBe('../');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('station_01.csv');
  });
});

/** Presses Tab until the element of `selector` has the focus (the order a keyboard user goes through). */
async function tabTo(page: Page, selector: string) {
  for (let i = 0; i < 40; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate(`document.activeElement?.matches(${JSON.stringify(selector)}) ?? false`)) return;
  }
  throw new Error(`Tab never reached ${selector}`);
}

/** The text of the element that has the focus. */
const focused = (page: Page) => page.evaluate('document.activeElement?.textContent') as Promise<string | undefined>;
