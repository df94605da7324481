import { afterAll, beforeAll, expect, it } from 'vitest';
import { bootstrapWebAdmin } from '../../core/console/sign-in.ts';
import { FormAgent } from '../support/form-agent.ts';
import { scaled } from '../support/time.ts';
import { retrievalScene } from './support.ts';

/** The console's destinations page shows what the store holds, as /metrics counts it. */
let scene: Awaited<ReturnType<typeof retrievalScene>>;
let operator: FormAgent;

beforeAll(async () => {
  scene = await retrievalScene('console-store');
  const password = (await bootstrapWebAdmin(scene.h.ports))!;
  operator = new FormAgent(scene.h.app, '192.0.2.40');
  const page = await operator.request('GET', '/console/login');
  const r = await operator.request('POST', '/console/login', { csrf: page.csrf!, username: 'admin', password });
  expect(r.status).toBe(303);
}, scaled(60_000));
afterAll(() => scene?.close());

const storeLine = async () => {
  const page = await operator.request('GET', '/console/monitor/destinations');
  expect(page.status).toBe(200);
  return /<p class="muted" data-store[^>]*>([\s\S]*?)<\/p>/.exec(page.text)?.[1]?.replace(/<[^>]+>|<!--.*?-->/g, '');
};
const metrics = async () => {
  const r = await scene.h.call('GET', '/metrics', { auth: await scene.h.client('prometheus', ['.*']) });
  expect(r.status).toBe(200);
  return r.text;
};
const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1]);

it('shows the store, its objects and bytes, growing as files are retrieved', async () => {
  expect(await storeLine()).toMatch(/Store \(directory .+\): 0 objects, 0 bytes/);
  await scene.quietDestinations([{ name: 'STORED' }]);
  await scene.put('STORED', { size: 1000 });
  await scene.put('STORED', { size: 2345 });
  const { outcomes } = await scene.retrieveDue();
  expect(outcomes).toEqual(['stored', 'stored']);
  expect(await storeLine()).toMatch(/: 2 objects, 3,345 bytes/);
  const text = await metrics();
  expect([metric(text, 'ecpds_store_objects'), metric(text, 'ecpds_store_bytes')]).toEqual([2, 3345]);
});
