import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { worker, workerEnv } from './support.ts';

/** One request through the Worker's fetch handler, waiting for its background work. */
async function throughWorker(url: string): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(url), workerEnv, ctx);
  const body = await res.text();
  await waitOnExecutionContext(ctx);
  return new Response(body, { status: res.status, headers: res.headers });
}

describe('the guides inside workerd (no file system: the bundled pages)', () => {
  it('lists the pages and renders each, at the root and under the base path', async () => {
    const index = await throughWorker('https://edge.test/docs/guide');
    expect(index.status).toBe(200);
    const text = await index.text();
    for (const name of ['operators', 'pipelines', 'consumers', 'deploy', 'reference', 'development']) {
      expect(text).toContain(`<a href="guide/${name}">`);
    }
    const page = await throughWorker('https://edge.test/docs/guide/operators');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/style-src 'sha256-/);
    expect(await page.text()).toContain('<h2 id="administration-console">Administration console</h2>');
    const based = await throughWorker('https://edge.test/ecpds/docs/guide/reference');
    expect(await based.text()).toContain('<h2 id="configuration-variables">Configuration variables</h2>');
    expect((await throughWorker('https://edge.test/docs/guide/nothing')).status).toBe(404);
  });
});
