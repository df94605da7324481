import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Base64 } from '../../core/common/crypto.ts';
import { destinations } from '../../db/schema.ts';
import { parseConfig } from '../../functions/node/config.ts';
import { openRuntime, type Runtime } from '../../functions/node/runtime.ts';
import { freshPostgres, onPostgres } from '../support/database.ts';
import { freePort, killAll, removeTempDirs, type ServerProcess, startServer, tempDir } from '../support/processes.ts';
import { screenshotPath } from '../support/screenshots.ts';
import { scaled } from '../support/time.ts';
import { needs } from '../support/tools.ts';

/**
 * An incoming user's console page in headless Chromium against a real `ecpds-edge serve` (PGlite
 * in a temp dir, or Postgres with TEST_DATABASE_URL): it renders its sections and chart without
 * breaking the CSP, and a permission granted with a checkbox is stored and audited. Needs Debian's
 * `chromium`. The screenshot kept as test/portal/console-incoming-user.png
 * is rewritten with UPDATE_SCREENSHOTS=1 (else it goes under test-artifacts/).
 */
const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT = screenshotPath(path.join(import.meta.dirname, 'console-incoming-user.png'));

let env: Record<string, string>;
let dropDatabase = async () => {};
let server: ServerProcess;
let base = '';
let adminPassword = '';
let context: BrowserContext;
let page: Page;
const problems: string[] = [];
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

async function withRuntime<T>(work: (runtime: Runtime) => Promise<T>) {
  const runtime = await openRuntime(parseConfig(env), quiet, { hold: false });
  try {
    return await work(runtime);
  } finally {
    await runtime.close();
  }
}

/** A self-service user with two destinations, subscribers in each status, options, a last login, a day of traffic. */
async function seed() {
  await withRuntime(async ({ ports, handle }) => {
    const now = new Date();
    const repos = ports.repos;
    for (const name of ['MO_EXETER', 'DWD_OFFENBACH']) {
      await handle.db.insert(destinations).values({ name, countryIso: 'gb', type: 1 });
    }
    await repos.incomingUsers.insert(
      {
        id: 'consumer',
        email: 'data@consumer.example.org',
        iso: 'gb',
        portalService: 'self-service',
        active: true,
        passwordSealed: null,
        lastLoginDate: null,
      },
      now,
    );
    for (const d of ['MO_EXETER', 'DWD_OFFENBACH']) await repos.incomingUsers.addAssociation('consumer', d);
    await repos.portal.recordLogin('consumer', new Date(now.getTime() - 42 * 60_000), '198.51.100.23');
    await repos.portal.setOption('consumer', 'portal.maxConnections', '4');
    await repos.portal.setOption('consumer', 'portal.getPathPermRegex', 'MO_EXETER/.*|DWD_OFFENBACH/icon/.*');
    const people = [
      ['Ada Lovelace', 'ada@example.org', 'verified'],
      ['Grace Hopper', 'grace@example.org', 'active'],
      ['Alan Turing', 'alan@example.org', 'revoked'],
      ['Edsger Dijkstra', 'edsger@example.org', 'unverified'],
    ] as const;
    for (const [name, email, status] of people) {
      const id = (await repos.portal.addSubscriber(
        { userId: 'consumer', name, email, iso: 'gb', tokenHash: sha256Base64(email), tokenExpiresAt: now },
        new Date(now.getTime() - 3 * 86_400_000),
      ))!;
      if (status === 'unverified') continue;
      await repos.portal.changeSubscriber(id, ['unverified'], { status: 'verified', at: now, clearToken: true });
      if (status === 'verified') continue;
      await repos.portal.changeSubscriber(id, ['verified'], {
        status: 'active',
        at: now,
        passwordHash: sha256Base64(`pw-${email}`),
      });
      if (status === 'revoked') await repos.portal.changeSubscriber(id, ['active'], { status: 'revoked', at: now });
    }
    // A working day's shape: downloads after each model run, a few uploads in the afternoon.
    const hour = Math.floor(now.getTime() / 3600_000) * 3600_000;
    for (let i = 0; i < 24; i++) {
      const start = new Date(hour - i * 3600_000 + 5 * 60_000);
      if (start.getTime() > now.getTime()) continue;
      const utcHour = start.getUTCHours();
      // Four runs a day (00, 06, 12, 18 UTC): most is fetched in the two hours after each.
      const sinceRun = utcHour % 6;
      const downloadBytes = Math.round((40 + 420 * Math.exp(-((sinceRun - 1.5) ** 2))) * 1048576);
      const uploadBytes = utcHour >= 12 && utcHour < 17 ? (utcHour - 11) * 24 * 1048576 : 0;
      await repos.portal.addTraffic('consumer', start, 'https', {
        downloadBytes,
        uploadBytes,
        downloads: 20 + (utcHour % 7),
        uploads: uploadBytes > 0 ? 3 : 0,
      });
    }
  });
}

async function submit(click: () => Promise<void>) {
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), click()]);
}
const heading = () => page.locator('main h1').innerText();

describe("an incoming user's console page in headless Chromium", needs('chromium'), () => {
  beforeAll(async () => {
    if (onPostgres()) {
      const db = await freshPostgres(process.env.TEST_DATABASE_URL!);
      dropDatabase = db.close;
      env = { DATABASE_URL: db.url, ECPDS_SECRET_KEY: Buffer.alloc(32, 5).toString('base64') };
    } else {
      env = { ECPDS_DATA_DIR: tempDir('ecpds-portal-console-e2e-') };
    }
    await seed();
    server = startServer({ ...env, PORT: String(await freePort()), ECPDS_MOVER: '0' });
    base = await server.ready;
    adminPassword = /Console administrator 'admin'[^\n]*\n\n\s+(\S+)\n/.exec(server.output())?.[1] ?? '';
    expect(adminPassword, server.output()).not.toBe('');

    context = await chromium.launchPersistentContext(tempDir('ecpds-portal-chromium-'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
      ignoreHTTPSErrors: true,
      viewport: { width: 1200, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => void (/Content Security Policy|Refused to/i.test(m.text()) && problems.push(m.text())));
    page.on('pageerror', (e) => void problems.push(`script error: ${e.message}`));
    page.on('request', (r) => void (new URL(r.url()).origin !== base && problems.push(`elsewhere: ${r.url()}`)));
  }, scaled(180_000));

  afterAll(async () => {
    await context?.close();
    await server?.stop();
    await killAll();
    await dropDatabase();
    removeTempDirs();
  });

  it('leads from the nav to the list and to the user, whose page shows every section', async () => {
    await page.goto(`${base}/console/login`);
    await page.fill('#username', 'admin');
    await page.fill('#password', adminPassword);
    await submit(() => page.getByRole('button', { name: 'Log in', exact: true }).click());
    await submit(() =>
      page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Incoming users' }).click(),
    );
    expect(await heading()).toBe('Incoming users');
    await submit(() => page.getByRole('link', { name: 'consumer', exact: true }).click());
    expect(await heading()).toBe('Incoming user consumer');

    const facts = await page.locator('dl.facts').innerText();
    expect(facts).toMatch(/Portal mode\s+self-service/);
    expect(facts).toContain('from 198.51.100.23');
    expect(facts).toMatch(/DWD_OFFENBACH\s+MO_EXETER/);
    for (const name of ['Permissions', 'Options', 'Subscribers', 'Traffic over the last 24 hours']) {
      expect(await page.getByRole('heading', { name, level: 2 }).count(), name).toBe(1);
    }
    const chart = page.getByRole('img', { name: /Bytes downloaded and uploaded per hour/ });
    expect(await chart.count()).toBe(1);
    const box = (await chart.boundingBox())!;
    expect(box.width).toBeGreaterThan(600);
    expect(await page.locator('svg.traffic rect[fill="#0a58ca"]').count()).toBe(24);
    await page.getByText('Traffic per hour as a table').click();
    expect(await page.locator('table.traffic-table tbody tr').count()).toBe(24);
    expect(await page.getByRole('button', { name: /^Approve subscriber \d+ \(ada@example\.org\)$/ }).count()).toBe(1);
    expect(await page.getByRole('button', { name: /^Revoke subscriber \d+ \(alan@example\.org\)$/ }).count()).toBe(0);
    expect(await page.getByLabel('Value of portal.maxConnections').inputValue()).toBe('4');
  });

  it('grants a permission with its checkbox: stored, shown checked again, and in the audit trail', async () => {
    const put = page.getByRole('checkbox', { name: /^put\b/ });
    expect(await put.isChecked()).toBe(false);
    await put.check();
    await submit(() => page.getByRole('button', { name: 'Save permissions' }).click());
    expect(new URL(page.url()).search).toBe('?done=permissions');
    expect(await page.getByRole('status').innerText()).toBe('Permissions saved.');
    expect(await page.getByRole('checkbox', { name: /^put\b/ }).isChecked()).toBe(true);
    await page.reload();
    expect(await page.getByRole('checkbox', { name: /^put\b/ }).isChecked()).toBe(true);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    await page.goto(`${base}/console/audit`);
    const first = await page.locator('tbody tr').first().innerText();
    expect(first).toMatch(/admin\s+change portal permissions\s+incoming user consumer\s+granted put/);
  });

  it('refuses a bad option value in its row, and sets a good one', async () => {
    await page.goto(`${base}/console/incoming/consumer`);
    const field = page.getByLabel('Value of portal.maxDownloadBytes');
    await field.fill('ten gigabytes');
    await submit(() => page.getByRole('button', { name: 'Set portal.maxDownloadBytes' }).click());
    expect(await page.getByRole('alert').innerText()).toContain('portal.maxDownloadBytes was not saved');
    expect(await page.locator('tr.refused').innerText()).toContain('bytes, a whole number expected');
    await page.getByLabel('Value of portal.maxDownloadBytes').fill('10737418240');
    await submit(() => page.getByRole('button', { name: 'Set portal.maxDownloadBytes' }).click());
    expect(await page.getByRole('status').innerText()).toBe('Option saved.');
    expect(await page.getByLabel('Value of portal.maxDownloadBytes').inputValue()).toBe('10737418240');
  });

  it('fits a phone: nothing but the tables scrolls sideways', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    await page.reload();
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await page.setViewportSize({ width: 1200, height: 900 });
  });

  it('broke no Content-Security-Policy, threw no script error and loaded nothing from elsewhere', () => {
    expect(problems).toEqual([]);
  });
});
