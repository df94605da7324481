import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GUIDE_STYLE, headingSlug, renderGuide } from '../../functions/http/guide.ts';
import { GUIDE_PAGES } from '../../functions/http/guide-pages.generated.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { ROOT } from '../support/processes.ts';

const NAMES = ['operators', 'pipelines', 'consumers', 'deploy', 'reference', 'development'];
const markdownOf = (name: string) => fs.readFileSync(path.join(ROOT, 'docs', `${name}.md`), 'utf8');

describe('the bundled guides', () => {
  it('are docs/*.md as they are now (else run `node functions/docs-bundle.mjs`)', () => {
    const pages = fs
      .readdirSync(path.join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => f.slice(0, -3));
    expect(GUIDE_PAGES.map((p) => p.name).sort(), 'run `node functions/docs-bundle.mjs`').toEqual(pages.sort());
    for (const page of GUIDE_PAGES) {
      expect(
        page.markdown === markdownOf(page.name),
        `docs/${page.name}.md changed: run node functions/docs-bundle.mjs`,
      ).toBe(true);
    }
  });

  it('start with a title, who they are for and their contents', () => {
    expect(GUIDE_PAGES.map((p) => p.name)).toEqual(NAMES);
    for (const page of GUIDE_PAGES) {
      expect(page.markdown.startsWith(`# ${page.title}\n\n${page.summary.slice(0, 20)}`), page.name).toBe(true);
      expect(page.markdown, page.name).toMatch(/\n\nContents:\n\n- \[/);
    }
  });

  it('link only to headings and pages that exist', () => {
    const anchors = new Map(
      GUIDE_PAGES.map((p) => {
        const html = renderGuide(p.markdown, '');
        return [p.name, new Set([...html.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]!))];
      }),
    );
    const files = [...GUIDE_PAGES.map((p) => [`docs/${p.name}.md`, p.markdown]), ['README.md', null]] as const;
    for (const [file, text] of files) {
      const markdown = text ?? fs.readFileSync(path.join(ROOT, file), 'utf8');
      const dir = path.dirname(path.join(ROOT, file));
      for (const [, target] of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?|mailto):/.test(target!)) continue;
        const [where, anchor] = target!.split('#') as [string, string | undefined];
        const linked = where ? path.resolve(dir, where) : path.join(ROOT, file);
        expect(fs.existsSync(linked), `${file}: ${target}`).toBe(true);
        const page = path.relative(path.join(ROOT, 'docs'), linked).replace(/\.md$/, '');
        if (anchor && anchors.has(page)) expect(anchors.get(page)!.has(anchor), `${file}: ${target}`).toBe(true);
      }
    }
  });

  it('make anchors as GitHub does', () => {
    expect(headingSlug('Rules at datafile/put')).toBe('rules-at-datafileput');
    expect(headingSlug('Retention (purge)')).toBe('retention-purge');
    expect(headingSlug('The `/ecpds/v1` base path')).toBe('the-ecpdsv1-base-path');
  });
});

describe('/docs/guide', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  const hash = (t: string) => `'sha256-${createHash('sha256').update(t).digest('base64')}'`;

  it('lists the pages, linked from /docs', async () => {
    const r = await h.call('GET', '/docs/guide');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    for (const name of NAMES) expect(r.text).toContain(`<a href="guide/${name}">`);
    expect(r.text).toContain('<a href="../docs">');
    expect((await h.call('GET', '/docs')).text).toContain('<a href="docs/guide">');
  });

  it('renders a page from docs/, its links leading to the served pages', async () => {
    const r = await h.call('GET', '/docs/guide/operators');
    expect(r.status).toBe(200);
    expect(r.text).toContain('<h2 id="administration-console">Administration console</h2>');
    expect(r.text).toContain('<h3 id="a-worked-example">A worked example</h3>');
    expect(r.text).toContain('<table>');
    expect(r.text).toContain('<a href="pipelines#destinations-metadata-backups-host-options">');
    expect(r.text).not.toContain('.md"');
    const reference = await h.call('GET', '/docs/guide/reference');
    expect(reference.text).toContain('<h2 id="configuration-variables">Configuration variables</h2>');
    expect(reference.text).toContain('<code>ECPDS_BASE_PATH</code>');
    // The place kept for other runtimes is not shown.
    expect((await h.call('GET', '/docs/guide/deploy')).text).not.toMatch(/runtimes --|&lt;!--/);
  });

  it('answers under the docs page policy: its own style, no script', async () => {
    for (const p of ['/docs/guide', '/docs/guide/consumers']) {
      const r = await h.call('GET', p);
      const policy = r.headers.get('content-security-policy')!;
      expect(policy).toContain("default-src 'none'");
      expect(policy).toContain(`style-src ${hash(GUIDE_STYLE)}`);
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).not.toContain('script-src');
      expect(r.headers.get('referrer-policy')).toBe('no-referrer');
      expect(r.text).not.toMatch(/<(script|iframe|img)\b/i);
      expect((await h.call('GET', p, { scheme: 'http' })).status).toBe(403);
    }
  });

  it('answers 404 for a page that is not there', async () => {
    for (const p of ['/docs/guide/nothing', '/docs/guide/operators.md', '/docs/guide/..%2FREADME']) {
      const r = await h.call('GET', p);
      expect(r.status, p).toBe(404);
      expect(r.text, p).toBe('Not found');
    }
  });

  it('is served under the base path too, with the same pages', async () => {
    const index = await h.call('GET', '/ecpds/docs/guide');
    expect(index.status).toBe(200);
    expect(index.text).toBe((await h.call('GET', '/docs/guide')).text);
    const page = await h.call('GET', '/ecpds/docs/guide/pipelines');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<h2 id="the-api">The API</h2>');
    expect((await h.call('GET', '/ecpds/docs/guide/nothing')).status).toBe(404);
  });
});
