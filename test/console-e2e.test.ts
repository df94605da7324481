import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scaled } from './support/time.ts';
import { needs } from './support/tools.ts';

/**
 * The console in headless Chromium against a real `ecpds-edge serve` (PGlite in a temp dir).
 * Needs Debian's `chromium` (apt-get install -y chromium); never `npx playwright install`.
 * Screenshots of each page go to test-artifacts/console/ (git-ignored).
 */
const CHROMIUM = '/usr/bin/chromium';
const ROOT = path.resolve(new URL('..', import.meta.url).pathname);
const ARTIFACTS = path.join(ROOT, 'test-artifacts/console');

let server: ChildProcess | undefined;
let output = '';
let base = '';
let apiSecret = '';
let adminPassword = '';
let context: BrowserContext;
let page: Page;
const temps: string[] = [];
const cspErrors: string[] = [];
const elsewhere: string[] = [];

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = net
      .createServer()
      .once('error', reject)
      .listen(0, '127.0.0.1', () => {
        const { port } = s.address() as net.AddressInfo;
        s.close(() => resolve(port));
      });
  });
const tempDir = (prefix: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  temps.push(dir);
  return dir;
};

/** An API call from Node over HTTPS, accepting the server's self-signed certificate. */
function api(
  method: string,
  urlPath: string,
  auth?: { username: string; secret: string },
): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = auth
      ? { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.secret}`).toString('base64')}` }
      : {};
    const req = https.request(`${base}${urlPath}`, { method, headers, rejectUnauthorized: false }, (res) => {
      let text = '';
      res
        .setEncoding('utf8')
        .on('data', (c: string) => void (text += c))
        .on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = text;
          }
          resolve({ status: res.statusCode ?? 0, json });
        });
    });
    req.on('error', reject).end();
  });
}
const incomingList = (secret: string) => api('GET', '/v1/incoming/user/list', { username: 'e2e-client', secret });
const expectRefused = async (secret: string) =>
  expect((await incomingList(secret)).json).toEqual({ status: 'error', message: 'User not authorized' });

const shot = async (name: string) => {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
};
/** Clicks something that submits a form and waits for the page that answers it. */
async function submit(target: Locator) {
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), target.click()]);
}
const heading = () => page.locator('main h1').innerText();
const button = (name: string) => page.getByRole('button', { name, exact: true });

async function login(username: string, password: string) {
  await page.goto(`${base}/console/login`);
  await page.fill('#username', username);
  await page.fill('#password', password);
  await submit(button('Log in'));
}

describe('administration console in headless Chromium', needs('chromium'), () => {
  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env))
      if (!/^(DATABASE_URL|TEST_DATABASE_URL|HOST|PORT|TLS_.*|ECPDS_.*)$/.test(k)) env[k] = v;
    Object.assign(env, {
      ECPDS_DATA_DIR: tempDir('ecpds-console-e2e-'),
      ECPDS_DEMO: '0',
      PORT: String(port),
      HOST: '127.0.0.1',
      // Not the default ports: the servers of parallel tests would share them.
      ECPDS_PORTAL_SFTP_PORT: '0',
      ECPDS_PORTAL_S3_PORT: '0',
    });
    server = spawn(process.execPath, [path.join(ROOT, 'functions/bin/ecpds-edge.mjs'), 'serve'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const started = new Promise<void>((resolve, reject) => {
      const read = (chunk: string) => {
        output += chunk;
        const secret = /Bootstrap API client 'admin'[^\n]*\n\n\s+(\S+)\n/.exec(output);
        const password = /Console administrator 'admin'[^\n]*\n\n\s+(\S+)\n/.exec(output);
        if (secret && password) [apiSecret, adminPassword] = [secret[1]!, password[1]!];
        if (secret && password) resolve();
      };
      server!.stdout!.setEncoding('utf8').on('data', read);
      server!.stderr!.setEncoding('utf8').on('data', read);
      server!.once('exit', (code) => reject(new Error(`server exited (${code}) before it was ready:\n${output}`)));
    });
    await started;
    base = `https://127.0.0.1:${port}`;

    context = await chromium.launchPersistentContext(tempDir('ecpds-chromium-'), {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      ignoreHTTPSErrors: true,
      viewport: { width: 1200, height: 900 },
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => void (/Content Security Policy|Refused to/i.test(m.text()) && cspErrors.push(m.text())));
    page.on('pageerror', (e) => void cspErrors.push(`script error: ${e.message}`));
    page.on('request', (r) => void (new URL(r.url()).origin !== base && elsewhere.push(r.url())));
  }, scaled(120_000));

  afterAll(async () => {
    await context?.close();
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (server.exitCode === null) server.kill('SIGKILL');
    }
    for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the first start printed the console password and the API secret once', async () => {
    expect(adminPassword).toMatch(/^\S{12,}$/);
    expect((await api('GET', '/v1/incoming/user/list', { username: 'admin', secret: apiSecret })).status).toBe(200);
  });

  it('logs in as the bootstrap administrator', async () => {
    await page.goto(`${base}/console/`);
    expect(new URL(page.url()).pathname).toBe('/console/login');
    await shot('01-login');
    await login('admin', 'wrong password');
    expect(await page.getByRole('alert').innerText()).toContain('Invalid username or password');
    await login('admin', adminPassword);
    expect(new URL(page.url()).pathname).toBe('/console/clients');
    expect(await heading()).toBe('API clients');
    const cookie = (await context.cookies(`${base}/console/clients`)).find((c) => c.name === 'ecpds_console')!;
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict', path: '/console' });
    await shot('02-clients');
  });

  let secret = '';
  it('creates a client and shows its secret once, with a copy button; the secret works on the API', async () => {
    await page.getByRole('link', { name: 'Create a client' }).click();
    await page.waitForURL('**/console/clients/new');
    await page.fill('#username', 'e2e-client');
    await page.check('input[name=service][value=incomingUserList]');
    await submit(button('Create'));
    expect(await heading()).toBe('Client created');
    secret = (await page.locator('#secret').innerText()).trim();
    expect(secret.length).toBeGreaterThan(20);
    await button('Copy secret').click();
    await page.waitForFunction("document.querySelector('[data-copy]').textContent !== 'Copy secret'");
    if ((await button('Copied').count()) > 0)
      expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
    await shot('03-client-created');
    expect((await incomingList(secret)).status).toBe(200);
    await page.goto(`${base}/console/clients`);
    const row = page.locator('tr', { has: page.getByRole('link', { name: 'e2e-client' }) });
    expect(await row.innerText()).toMatch(/e2e-client\s+incomingUserList\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+/);
    expect(await page.content()).not.toContain(secret);
  });

  it('checkboxes switch a service on and off for the next API call', async () => {
    await page.goto(`${base}/console/clients/e2e-client`);
    expect(await page.content()).not.toContain(secret);
    await page.uncheck('input[name=service][value=incomingUserList]');
    await page.check('input[name=service][value=destinationList]');
    await submit(button('Save permissions'));
    await expectRefused(secret);
    expect((await api('GET', '/v1/destination/list', { username: 'e2e-client', secret })).status).toBe(200);
    await page.check('input[name=service][value=incomingUserList]');
    await submit(button('Save permissions'));
    expect((await incomingList(secret)).status).toBe(200);
  });

  it('the regex editor reports live what an expression grants, and warns about showSensitiveInfo', async () => {
    await page.goto(`${base}/console/clients/e2e-client`);
    await page.uncheck('input[name=service][value=incomingUserList]');
    const report = page.locator('#expressions-report');
    await page.fill('#expressions', 'incoming(');
    expect(await report.innerText()).toMatch(/incoming\( → does not compile/);
    await page.fill('#expressions', '.*');
    expect(await report.innerText()).toContain('also grants showSensitiveInfo');
    await page.fill('#expressions', 'incomingUser.*\nshowSensitiveInfo\nwebUser(Add|List)');
    const lines = await report.locator('li').allInnerTexts();
    expect(lines).toEqual([
      'incomingUser.* → incomingUserAdd, incomingUserAdd2, incomingUserList, incomingUserDel',
      'showSensitiveInfo → showSensitiveInfo',
      'webUser(Add|List) → webUserAdd, webUserList',
    ]);
    await page.fill('#expressions', 'incomingUser.*\n(destinationList|show.*)');
    expect(await report.locator('li').nth(1).innerText()).toContain('also grants showSensitiveInfo');
    await shot('04-client-edit');
    await page.setViewportSize({ width: 375, height: 800 });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await shot('05-client-edit-narrow');
    await page.setViewportSize({ width: 1200, height: 900 });
    await page.fill('#expressions', 'incomingUser.*');
    await submit(button('Save permissions'));
    expect((await incomingList(secret)).status).toBe(200);
    expect(await page.inputValue('#expressions')).toBe('incomingUser.*');
    await page.fill('#expressions', 'incoming(User');
    await submit(button('Save permissions'));
    expect(await page.getByRole('alert').innerText()).toContain('Invalid permission expression: incoming(User');
    await page.goto(`${base}/console/clients/e2e-client`);
    expect(await page.inputValue('#expressions')).toBe('incomingUser.*');
    await page.fill('#expressions', '');
    await submit(button('Save permissions'));
    await expectRefused(secret);
    await page.fill('#expressions', 'incoming.*');
    await submit(button('Save permissions'));
    expect((await incomingList(secret)).status).toBe(200);
  });

  it('reset shows a new secret once; the old one stops working', async () => {
    await submit(button('Reset secret'));
    const fresh = (await page.locator('#secret').innerText()).trim();
    expect(fresh).not.toBe(secret);
    await shot('06-secret-reset');
    await expectRefused(secret);
    expect((await incomingList(fresh)).status).toBe(200);
    secret = fresh;
  });

  it('deletes the client after a confirmation', async () => {
    await page.goto(`${base}/console/clients/e2e-client`);
    await page.getByRole('link', { name: 'Delete…' }).click();
    await page.waitForURL('**/delete');
    await shot('07-client-delete');
    await submit(button('Delete e2e-client'));
    expect(new URL(page.url()).pathname).toBe('/console/clients');
    expect(await page.getByRole('link', { name: 'e2e-client' }).count()).toBe(0);
    await expectRefused(secret);
  });

  it('a form post without the CSRF token is refused, even with the session cookie', async () => {
    const status = await page.evaluate(
      async () =>
        (await fetch('/console/clients', { method: 'POST', body: new URLSearchParams({ username: 'forged' }) })).status,
    );
    expect(status).toBe(403);
    await page.goto(`${base}/console/clients`);
    expect(await page.getByRole('link', { name: 'forged' }).count()).toBe(0);
  });

  it('web users, metadata fields and the audit trail', async () => {
    const created = await api('POST', '/v1/web/user/add?id=viewer&pass=Viewer-Pass-1&active=true', {
      username: 'admin',
      secret: apiSecret,
    });
    expect(created.status).toBe(200);
    await page.goto(`${base}/console/users`);
    expect(await page.locator('tr', { hasText: 'viewer' }).innerText()).toContain('none');
    await shot('08-users');
    await page.goto(`${base}/console/fields/new`);
    await page.fill('#name', 'colour');
    await page.fill('#label', 'Colour');
    await page.fill('#category', 'General');
    await page.fill('#maxOccurs', '0');
    await submit(button('Save field'));
    expect(await page.getByRole('alert').innerText()).toContain('maxOccurs must be 1');
    await shot('09-field-error');
    await page.fill('#maxOccurs', '1');
    await submit(button('Save field'));
    expect(await page.locator('tr', { hasText: 'colour' }).innerText()).toMatch(/colour\s+Colour\s+text\s+General/);
    await shot('10-fields');
    await page.goto(`${base}/console/audit`);
    const audit = await page.locator('tbody').innerText();
    for (const what of [
      /create\s+API client e2e-client/,
      /set permissions\s+API client e2e-client/,
      /reset secret\s+API client e2e-client/,
      /delete\s+API client e2e-client/,
      /create\s+metadata field colour/,
    ])
      expect(audit).toMatch(what);
    await shot('11-audit');
  });

  it('a user without a category sees no admin page', async () => {
    await submit(button('Log out'));
    expect(new URL(page.url()).pathname).toBe('/console/login');
    await login('viewer', 'Viewer-Pass-1');
    expect(await heading()).toBe('No access');
    await shot('12-no-access');
    for (const p of ['/console/clients', '/console/users', '/console/fields', '/console/audit']) {
      const res = await page.goto(`${base}${p}`);
      expect(res!.status(), p).toBe(403);
      expect(await heading()).toBe('No access');
    }
    await page.setViewportSize({ width: 375, height: 700 });
    await submit(button('Log out'));
    await shot('13-login-narrow');
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
  });

  it('no page broke its Content-Security-Policy, threw a script error or loaded anything from elsewhere', () => {
    expect(cspErrors).toEqual([]);
    expect(elsewhere).toEqual([]);
  });
});
