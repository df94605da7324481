import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { serve } from '@hono/node-server';
import { type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapWebAdmin } from '../core/console/sign-in.ts';
import type { NodeConfig } from '../functions/node/config.ts';
import { loadTls } from '../functions/node/tls.ts';
import { createHarness, type Harness } from './support/harness.ts';
import { BACKUP_ERROR, FAILING_ERROR, monitorScene, productScene } from './support/monitor-scene.ts';
import { screenshotPath } from './support/screenshots.ts';
import { scaled } from './support/time.ts';
import { needs } from './support/tools.ts';

/**
 * The monitor pages in headless Chromium, served over HTTPS from the test harness's app (so the
 * mover and the clock are the test's). The screenshots docs/operators.md shows are
 * written to test-artifacts/test/, or over those in test/ with UPDATE_SCREENSHOTS=1.
 */
const CHROMIUM = '/usr/bin/chromium';
const ROOT = path.resolve(new URL('..', import.meta.url).pathname);

let h: Harness;
let server: ReturnType<typeof serve>;
let base = '';
let password = '';
let context: BrowserContext;
let page: Page;
const temps: string[] = [];
const problems: string[] = [];
const tempDir = (prefix: string) => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  temps.push(dir);
  return dir;
};
const shot = (name: string, fullPage = false) =>
  page.screenshot({ path: screenshotPath(path.join(ROOT, 'test', `${name}.png`)), fullPage });
type Styled = { getComputedStyle(e: unknown): { backgroundColor: string } };
const background = (target: Locator) =>
  target.evaluate((e) => (globalThis as unknown as Styled).getComputedStyle(e).backgroundColor);
const heading = () => page.locator('main h1').innerText();
async function submit(click: () => Promise<void>) {
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), click()]);
}

describe('console monitor in headless Chromium', needs('chromium'), () => {
  beforeAll(async () => {
    const sources = tempDir('ecpds-monitor-e2e-src-');
    h = await createHarness({ sourceRoots: [sources] });
    const api = await h.client('api-admin', ['.*']);
    password = (await bootstrapWebAdmin(h.ports))!;
    await monitorScene(h, api, sources);
    await productScene(h);
    const tls = await loadTls({ dataDir: tempDir('ecpds-monitor-e2e-tls-') } as NodeConfig);
    server = await new Promise((resolve) => {
      const s = serve(
        { fetch: h.app.fetch, hostname: '127.0.0.1', port: 0, createServer: https.createServer, serverOptions: tls },
        () => resolve(s),
      );
    });
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    context = await chromium.launchPersistentContext(tempDir('ecpds-monitor-chromium-'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
      ignoreHTTPSErrors: true,
      viewport: { width: 1280, height: 860 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => void (/Content Security Policy|Refused to/i.test(m.text()) && problems.push(m.text())));
    page.on('pageerror', (e) => void problems.push(`script error: ${e.message}`));
    page.on('request', (r) => void (new URL(r.url()).origin !== base && problems.push(`elsewhere: ${r.url()}`)));
    await page.goto(`${base}/console/login`);
    await page.fill('#username', 'admin');
    await page.fill('#password', password);
    await submit(() => page.getByRole('button', { name: 'Log in', exact: true }).click());
  }, scaled(120_000));

  afterAll(async () => {
    await context?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    await h?.close();
    for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the destinations page shows each status in its colour; Hold and Start work from the browser', async () => {
    await page.getByRole('link', { name: 'Destinations', exact: true }).click();
    await page.waitForURL('**/console/monitor/destinations');
    expect(await heading()).toBe('Destinations');
    const failing = page.locator('tr', { has: page.getByRole('link', { name: 'FAILING' }) });
    expect(await failing.innerText()).toMatch(new RegExp(`${FAILING_ERROR}|${BACKUP_ERROR}`));
    const badge = failing.locator('.status');
    expect(await badge.innerText()).toBe('Failed (HOLD)');
    expect(await background(badge)).toBe('rgb(255, 235, 233)');
    await submit(() => page.getByRole('button', { name: 'Hold QUIET' }).click());
    expect(await page.locator('tr', { hasText: 'QUIET' }).locator('.status').innerText()).toBe('Failed (HOLD)');
    await submit(() => page.getByRole('button', { name: 'Start QUIET' }).click());
    expect(await page.locator('tr', { hasText: 'QUIET' }).locator('.status').innerText()).toMatch(/\((WAIT|SCHE)\)$/);
    await page.screenshot({ path: path.join(ROOT, 'test-artifacts', 'monitor-destinations.png'), fullPage: true });
  });

  it('a healthy destination: its hosts, the last day of sending and its transfers', async () => {
    await page.getByRole('link', { name: 'HEALTHY' }).click();
    await page.waitForURL('**/console/monitor/destinations/HEALTHY');
    expect(await heading()).toBe('Destination HEALTHY');
    expect(await page.locator('.charts svg').count()).toBe(2);
    expect(await page.locator('.charts svg').first().boundingBox()).toMatchObject({ width: 432, height: 74 });
    await page.setViewportSize({ width: 1280, height: 1150 });
    await page.locator('details:not(.sums) summary').first().click();
    expect(await page.locator('details[open] ol.history').innerText()).toMatch(/WAIT[\s\S]*EXEC[\s\S]*DONE/);
    await page.evaluate('window.scrollTo(0, 0)');
    await shot('monitor-destination-healthy');
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('a failing destination: its error on the page and on each host', async () => {
    await page.goto(`${base}/console/monitor/destinations/FAILING`);
    expect(await page.locator('dl.facts').innerText()).toMatch(new RegExp(`${FAILING_ERROR}|${BACKUP_ERROR}`));
    const hosts = page.locator('table', { hasText: 'Last result' }).locator('tbody tr');
    expect(await hosts.first().innerText()).toContain(FAILING_ERROR);
    expect(await hosts.nth(1).innerText()).toContain(BACKUP_ERROR);
    const [first] = await page.locator('tr[id^="transfer-"]').all();
    await submit(() => first!.getByRole('button', { name: /^Stop transfer/ }).click());
    expect(await first!.locator('.tstatus').innerText()).toBe('STOP');
    await shot('monitor-destination-failing', true);
  });

  it('the product grid, coloured by status level, links each cell to its history', async () => {
    await page.getByRole('link', { name: 'Products', exact: true }).click();
    await page.waitForURL('**/console/monitor/products');
    const late = page.locator('a.level-5');
    expect(await background(late)).toBe('rgb(207, 34, 46)');
    await page.setViewportSize({ width: 1280, height: 520 });
    await shot('monitor-products');
    await page.setViewportSize({ width: 1280, height: 860 });
    await submit(() => late.click());
    expect(await heading()).toBe('ens 00 step 48 (fc)');
    expect(await page.locator('tbody').innerText()).toContain('Expected');
  });

  it('no page broke its Content-Security-Policy, threw a script error or loaded anything from elsewhere', () => {
    expect(problems).toEqual([]);
  });
});
