import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { and, desc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapWebAdmin } from '../core/console/sign-in.ts';
import { auditLog, dataTransfers, destinationState, destinations } from '../db/schema.ts';
import { createHarness, type Harness } from './support/harness.ts';
import { BACKUP_ERROR, FAILING_ERROR, monitorScene, productScene } from './support/monitor-scene.ts';
import { scaled } from './support/time.ts';

/** The console's monitor pages through `app.request()`, on data an operator's day would leave. */
let h: Harness;
let sources: string;
let scene: Awaited<ReturnType<typeof monitorScene>>;

class Agent {
  readonly jar = new Map<string, string>();
  async request(method: string, path: string, form?: Record<string, string>) {
    const cookie = [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const body = form && new URLSearchParams(form);
    const res = await h.app.request(`https://localhost${path}`, {
      method,
      body,
      headers: {
        ...(cookie && { cookie }),
        ...(body && { 'content-type': 'application/x-www-form-urlencoded' }),
      },
    });
    for (const line of res.headers.getSetCookie()) {
      const [, name, value] = /^([^=]+)=([^;]*)/.exec(line)!;
      if (value === '' || /max-age=0\b/i.test(line)) this.jar.delete(name!);
      else this.jar.set(name!, value!);
    }
    const text = await res.text();
    return { status: res.status, text, location: res.headers.get('location') };
  }
  get = (path: string) => this.request('GET', path);
  /** Posts a form with the CSRF token of the page it comes from. */
  async submit(from: string, action: string, form: Record<string, string> = {}) {
    const page = await this.get(from);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1];
    expect(csrf, `${from} has a CSRF field`).toBeTruthy();
    return this.request('POST', action, { csrf: csrf!, ...form });
  }
  static async signIn(username: string, password: string) {
    const agent = new Agent();
    const r = await agent.submit('/console/login', '/console/login', { username, password });
    expect([r.status, r.location]).toEqual([303, '/console/clients']);
    return agent;
  }
}

const stored = async (name: string) =>
  (await h.db.select().from(destinations).where(eq(destinations.name, name)))[0]!.statusCode;
const auditOf = (action: string, target: string) =>
  h.db
    .select()
    .from(auditLog)
    .where(and(eq(auditLog.action, action), eq(auditLog.target, target)))
    .orderBy(desc(auditLog.id));
const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

let admin: Agent;
beforeAll(async () => {
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-monitor-src-')));
  h = await createHarness({ sourceRoots: [sources] });
  const api = await h.client('api-admin', ['.*']);
  const password = (await bootstrapWebAdmin(h.ports))!;
  const r = await h.call('POST', '/v1/web/user/add?id=watcher&pass=watcher-Pass-1&active=true', { auth: api });
  expect(r.status).toBe(200);
  scene = await monitorScene(h, api, sources);
  await productScene(h);
  admin = await Agent.signIn('admin', password);
}, scaled(90_000));
afterAll(async () => {
  await h.close();
  fs.rmSync(sources, { recursive: true, force: true });
});

describe('monitor: destinations', () => {
  it('lists each destination with its shown status, counts, current host, last success and last error', async () => {
    const page = await admin.get('/console/monitor/destinations');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<a href="/console/monitor/destinations">Destinations</a>');
    const row = (name: string) => text(new RegExp(`<tr><td><a href="[^"]+/${name}">.*?</tr>`).exec(page.text)![0]);
    const healthy = row('HEALTHY');
    expect(healthy).toMatch(/Idle \(WAIT\)/);
    expect(healthy).toMatch(/DONE 17/);
    expect(healthy).toMatch(/healthy-0 \(localhost\) primary of 2/);
    expect(healthy).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC never/);
    const failing = row('FAILING');
    expect(failing).toMatch(/Failed \(HOLD\)/);
    expect(failing).toContain('RETR 2');
    const [state] = await h.db.select().from(destinationState).where(eq(destinationState.destination, 'FAILING'));
    expect([FAILING_ERROR, BACKUP_ERROR]).toContain(state!.lastError);
    expect(failing).toContain(state!.lastError);
    expect(page.text).toMatch(/class="status tone-bad">Failed <small>\(HOLD\)/);
    expect(row('QUIET')).toMatch(/Initialized \(INIT\).*WAIT 1.*never.*never/);
  });

  it('filters by name and by shown status, and pages by name', async () => {
    const byName = await admin.get('/console/monitor/destinations?prefix=fail');
    expect(byName.text).toContain('>FAILING</a>');
    expect(byName.text).not.toContain('>HEALTHY</a>');
    const held = await admin.get('/console/monitor/destinations?shown=HOLD');
    expect(held.text).toContain('>FAILING</a>');
    expect(held.text).not.toContain('>QUIET</a>');
    for (let i = 0; i < 55; i++) await h.addDestination(`PAGED_${String(i).padStart(2, '0')}`);
    const first = await admin.get('/console/monitor/destinations?prefix=PAGED_');
    expect(first.text).toContain('>PAGED_49</a>');
    expect(first.text).not.toContain('>PAGED_50</a>');
    const next = /href="([^"]+)">Next page</.exec(first.text)![1]!.replace(/&amp;/g, '&');
    expect(next).toBe('/console/monitor/destinations?prefix=PAGED_&after=PAGED_49');
    const second = await admin.get(next);
    expect(second.text).toContain('>PAGED_54</a>');
    expect(second.text).not.toContain('>PAGED_49</a>');
    expect(second.text).not.toContain('Next page');
  });

  it('start, hold and stop change the stored status, each with its audit row', async () => {
    for (const [action, status] of [
      ['start', 'WAIT'],
      ['hold', 'HOLD'],
      ['stop', 'STOP'],
    ] as const) {
      const r = await admin.submit('/console/monitor/destinations', `/console/monitor/destinations/QUIET/${action}`, {
        back: '/console/monitor/destinations?prefix=Q',
      });
      expect([r.status, r.location]).toEqual([303, '/console/monitor/destinations?prefix=Q']);
      expect(await stored('QUIET')).toBe(status);
      expect((await auditOf(`${action} destination`, 'QUIET'))[0]).toMatchObject({ actor: 'admin' });
    }
    const away = await admin.submit('/console/monitor/destinations', '/console/monitor/destinations/QUIET/start', {
      back: 'https://elsewhere.example/',
    });
    expect(away.location).toBe('/console/monitor/destinations/QUIET');
    const missing = await admin.submit('/console/monitor/destinations', '/console/monitor/destinations/NONE/hold');
    expect(decodeURIComponent(missing.location!)).toContain('error=Destination NONE not found');
  });
});

describe('monitor: one destination', () => {
  it('shows hosts in priority order with their last result, the 24-hour chart and the transfers', async () => {
    const page = await admin.get('/console/monitor/destinations/FAILING');
    expect(page.status).toBe(200);
    const hosts = text(/<h2>Hosts<\/h2>.*?<\/table>/s.exec(page.text)![0]);
    expect(hosts).toMatch(/primary failing-0 \(ftp\.example\.int\) test Failed .* UTC .*Connection refused/);
    expect(hosts).toMatch(/backup 1 failing-1 \(ftp-backup\.example\.int\) test Failed .* UTC 530 Login incorrect/);
    for (const id of scene.failing) expect(page.text).toContain(`id="transfer-${id}"`);

    const healthy = await admin.get('/console/monitor/destinations/HEALTHY');
    expect(text(healthy.text)).toMatch(/primary healthy-0 \(localhost\) file Sent/);
    expect(text(healthy.text)).toMatch(/in 17 files \(hours in UTC\)/);
    expect(healthy.text).toMatch(/<svg viewBox="0 0 432 74"[^>]*role="img" aria-label="Bytes per hour">/);
    expect(healthy.text.match(/<rect /g)?.length).toBe(48);
    expect(healthy.text).not.toMatch(/style=/);
    expect(text(healthy.text)).toMatch(/\d+ changes .*WAIT .*EXEC on host \d+ .*DONE on host \d+/);
  });

  it('filters transfers by status and pages them newest first', async () => {
    const done = await admin.get('/console/monitor/destinations/HEALTHY?status=DONE');
    const ids = [...done.text.matchAll(/id="transfer-(\d+)"/g)].map((m) => Number(m[1]));
    expect(ids).toHaveLength(17);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect((await admin.get('/console/monitor/destinations/HEALTHY?status=HOLD')).text).toContain(
      'No transfer in HOLD',
    );
    const older = await admin.get(`/console/monitor/destinations/HEALTHY?before=${ids[4]}`);
    const olderIds = [...older.text.matchAll(/id="transfer-(\d+)"/g)].map((m) => Number(m[1]));
    expect(olderIds).toEqual(ids.slice(5));
    expect((await admin.get('/console/monitor/destinations/NOPE')).status).toBe(404);
  });

  it('requeue, hold and stop change a transfer with its history and audit rows; a refusal is shown', async () => {
    const [id] = scene.failing;
    const from = '/console/monitor/destinations/FAILING';
    for (const [action, status] of [
      ['hold', 'HOLD'],
      ['requeue', 'RETR'],
      ['stop', 'STOP'],
    ] as const) {
      const r = await admin.submit(from, `/console/monitor/transfers/${id}/${action}`, { back: from });
      expect([r.status, r.location]).toEqual([303, from]);
      expect((await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id!)))[0]!.status).toBe(status);
      expect((await auditOf(`${action} transfer`, String(id)))[0]).toMatchObject({ actor: 'admin' });
    }
    const again = await admin.submit(from, `/console/monitor/transfers/${id}/stop`, { back: from });
    const shown = await admin.get(again.location!);
    expect(shown.text).toContain('role="alert">Transfer is already STOP</p>');
    expect(text(shown.text)).toMatch(/STOP .*stop by admin/);
  });
});

describe("monitor: a destination's WIS2 topic", () => {
  it('is set, changed and removed on its page, checked when written; a refusal is shown', async () => {
    const from = '/console/monitor/destinations/HEALTHY';
    const action = `${from}/wis2/topic`;
    const optionsOf = async () =>
      (await h.db.select().from(destinations).where(eq(destinations.name, 'HEALTHY')))[0]!.data;
    expect(text((await admin.get(from)).text)).toContain(
      'WIS2 notifications No topic: the destination publishes nothing.',
    );
    for (const topic of [
      'origin/a/wis2/xx-ecpds/data/recommended/weather/a',
      'origin/a/wis2/xx-ecpds/data/recommended/ocean/b',
    ]) {
      const r = await admin.submit(from, action, { topic: ` ${topic} ` });
      expect([r.status, r.location]).toEqual([303, `${from}#wis2`]);
      expect(await optionsOf()).toBe(`wis2.topic = "${topic}"`);
      expect((await admin.get(from)).text).toMatch(new RegExp(`id="wis2-topic"[^>]*value="${topic}"`));
      expect((await auditOf('set destination option', 'HEALTHY'))[0]).toMatchObject({
        actor: 'admin',
        detail: `wis2.topic=${topic}`,
      });
    }
    for (const [topic, shown] of [
      [
        'origin/a/wis2/xx-ecpds/data/core/weather/a',
        /announces core data.*destination HEALTHY has no active open-access/,
      ],
      ['origin/a/wis2/xx-ecpds/data/recommended/weather/+', /Invalid value for wis2.topic/],
    ] as const) {
      const refused = await admin.submit(from, action, { topic });
      expect(refused.location).toMatch(/^\/console\/monitor\/destinations\/HEALTHY\?error=.*#wis2$/);
      expect(text((await admin.get(refused.location!.replace(/#.*/, ''))).text)).toMatch(shown);
    }
    expect(await optionsOf()).toBe('wis2.topic = "origin/a/wis2/xx-ecpds/data/recommended/ocean/b"');
    expect((await admin.submit(from, action, { topic: '' })).location).toBe(`${from}#wis2`);
    expect(await optionsOf()).toBe('');
    expect((await auditOf('remove destination option', 'HEALTHY'))[0]).toMatchObject({ actor: 'admin' });
  });
});

describe('monitor: products', () => {
  it('shows the summary as a grid coloured by status level, with a legend and links to each history', async () => {
    const page = await admin.get('/console/monitor/products');
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<ul class="legend"/);
    for (const s of [0, 6, 12, 24, 48]) expect(page.text).toContain(`<th scope="col">Step ${s}</th>`);
    const ens = /<tr><th scope="row">ens<\/th>.*?<\/tr>/.exec(page.text)![0];
    const levels = [...ens.matchAll(/class="level level-(\w+)"/g)].map((m) => m[1]);
    expect(levels).toEqual(['1', '2', '3', '4', '5']);
    const hres = /<tr><th scope="row">hres<\/th>.*?<\/tr>/.exec(page.text)![0];
    expect([...hres.matchAll(/class="level level-(\w+)"/g)].map((m) => m[1])).toEqual(['1', '2', '3']);
    expect(text(hres)).toMatch(/Started fc Expected fc Expected fc/);
    const link = /href="(\/console\/monitor\/products\/history\?[^"]+step=6[^"]*)"/
      .exec(ens)![1]!
      .replace(/&amp;/g, '&');
    const history = await admin.get(link);
    expect(history.status).toBe(200);
    expect(text(history.text)).toMatch(/ens 00 step 6 \(fc\)/);
    expect(text(history.text)).toMatch(/Completed .*Expected/);
    expect((await admin.get('/console/monitor/products?product=hres')).text).not.toContain('scope="row">ens<');
    expect((await admin.get('/console/monitor/products/history?product=ens')).status).toBe(400);
  });
});

describe('monitor: access', () => {
  it('a web user without a category with console access is refused every monitor page and action', async () => {
    const watcher = await Agent.signIn('watcher', 'watcher-Pass-1');
    for (const p of [
      '/console/monitor/destinations',
      '/console/monitor/destinations/HEALTHY',
      '/console/monitor/products',
      '/console/monitor/products/history?product=ens&time=00&step=0&type=fc',
    ]) {
      const r = await watcher.get(p);
      expect([p, r.status]).toEqual([p, 403]);
      expect(r.text).toContain('No access');
    }
    const before = await stored('HEALTHY');
    const post = await watcher.submit('/console/clients', '/console/monitor/destinations/HEALTHY/hold');
    expect(post.status).toBe(403);
    expect(await stored('HEALTHY')).toBe(before);
    const anonymous = await new Agent().get('/console/monitor/destinations');
    expect([anonymous.status, anonymous.location]).toEqual([303, '/console/login']);
  });

  it('an action without the CSRF token is refused', async () => {
    const r = await admin.request('POST', '/console/monitor/destinations/HEALTHY/hold', {});
    expect(r.status).toBe(403);
    expect(await stored('HEALTHY')).toBe('WAIT');
  });
});
