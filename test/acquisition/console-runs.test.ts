import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bootstrapWebAdmin } from '../../core/console/sign-in.ts';
import { hosts } from '../../db/schema.ts';
import { restoreDestination } from '../support/engine.ts';
import { FormAgent } from '../support/form-agent.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { scaled } from '../support/time.ts';

/** The console's monitor shows each Acquisition host's last run, and its output entry by entry. */
let h: Harness;
let operator: FormAgent;
let hostId: number;

beforeAll(async () => {
  h = await createHarness();
  const api = await h.client('api-admin', ['.*']);
  const acquiring = {
    method: 'sftp' as const,
    type: 'Acquisition',
    nickname: 'partner-acq',
    host: 'partner.example',
    dir: '/data/{.*\\.grib}',
    acquisitionFrequency: 60_000,
  };
  await restoreDestination(h, api, 'ACQ_CONSOLE', [acquiring], { destination: { type: 0 } });
  const [row] = await h.db.select({ id: hosts.hostid }).from(hosts).where(eq(hosts.nickname, 'partner-acq'));
  hostId = row!.id;
  const password = (await bootstrapWebAdmin(h.ports))!;
  operator = new FormAgent(h.app, '192.0.2.41');
  const page = await operator.request('GET', '/console/login');
  const r = await operator.request('POST', '/console/login', { csrf: page.csrf!, username: 'admin', password });
  expect(r.status).toBe(303);
}, scaled(60_000));
afterAll(() => h?.close());

const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

it('a host not listed yet, then its last run with a link to its entries, escaped', async () => {
  const before = await operator.request('GET', '/console/monitor/destinations/ACQ_CONSOLE');
  expect(before.status).toBe(200);
  expect(text(before.text)).toContain('Acquisition Host Last run Next run Output partner-acq (partner.example)');
  expect(text(before.text)).toContain('not listed yet');

  const repo = h.ports.repos.acquisition;
  const [claim] = await repo.claim('mover-1', 60_000, 5, 5);
  expect(claim?.host.hostId).toBe(String(hostId));
  const output = 'Listing /data (/data/{.*\\.grib})\n  <b>x.grib</b> (ACQ_CONSOLE/x.grib): not selected: a directory';
  expect(await repo.finish('mover-1', hostId, { outcome: 'failed', output, counts: {} }, 60_000)).toBe(true);

  const after = await operator.request('GET', '/console/monitor/destinations/ACQ_CONSOLE');
  expect(text(after.text)).toMatch(/partner-acq \(partner\.example\) Failed \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
  expect(after.text).toContain(`href="/console/monitor/hosts/${hostId}/output"`);
  const entries = await operator.request('GET', `/console/monitor/hosts/${hostId}/output`);
  expect(entries.status).toBe(200);
  expect(entries.text).toContain(`Host ${hostId}: last run failed`);
  expect(entries.text).toContain('&lt;b&gt;x.grib&lt;/b&gt; (ACQ_CONSOLE/x.grib): not selected: a directory');
  expect(entries.text).not.toContain('<b>x.grib</b>');
});

it('an unknown host is a 404; signed out, the page is not shown', async () => {
  expect((await operator.request('GET', '/console/monitor/hosts/999999/output')).status).toBe(404);
  expect((await operator.request('GET', '/console/monitor/hosts/abc/output')).status).toBe(404);
  const stranger = new FormAgent(h.app, '192.0.2.42');
  const r = await stranger.request('GET', `/console/monitor/hosts/${hostId}/output`);
  expect(r.status).toBe(303);
  expect(r.location).toContain('/console/login');
});
