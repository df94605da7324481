import type { Hono } from 'hono';
import { bytesToBase64, utf8 } from '../../core/common/encoding.ts';
import { escapeHtml, renderMarkdown } from '../../core/metadata/markdown.ts';
import { PRODUCT } from '../../core/system/version.ts';
import type { Env } from './app.ts';
import { plain } from './errors.ts';
import { GUIDE_PAGES, type GuidePage } from './guide-pages.generated.ts';

/**
 * The guides of docs/ served as pages: /docs/guide lists them, /docs/guide/<page> renders one. The
 * markdown is the repository's own (bundled into guide-pages.generated.ts), rendered once per app
 * on first use. Links between the guides lead to their served paths; links to other files of the
 * repository (BENCHMARKS.md, a screenshot) keep their text only. The pages have one inline style,
 * allowed by hash, and no script.
 */
export const GUIDE_STYLE = `
body { font: 15px/1.55 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { background: #1d2330; color: #fff; padding: 10px 20px; }
header a { color: #9cc3ff; margin-right: 14px; }
main { padding: 8px 20px 40px; max-width: 1000px; background: #fff; }
h1 { font-size: 26px; } h2 { font-size: 21px; margin-top: 32px; } h3 { font-size: 17px; margin-top: 24px; }
code { font-family: ui-monospace, monospace; font-size: 13px; background: #f0f2f5; padding: 0 3px; }
pre { background: #f0f2f5; padding: 8px; overflow: auto; }
pre code { padding: 0; }
table { border-collapse: collapse; display: block; overflow: auto; margin: 8px 0; }
th, td { border: 1px solid #d8dce3; padding: 4px 8px; vertical-align: top; text-align: left; }
dt { font-weight: 600; margin-top: 10px; }
`;

const PAGES = new Map(GUIDE_PAGES.map((p) => [p.name, p]));

/** The text of a heading as GitHub makes its anchor: lower case, punctuation left out, spaces as `-`. */
export function headingSlug(text: string): string {
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

const textOf = (html: string) =>
  html
    .replace(/<[^>]*>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');

/**
 * A guide's markdown as HTML. `toPage` is the relative path from the page served to another page
 * (`''` on a page, `guide/` on the index).
 */
export function renderGuide(markdown: string, toPage: string): string {
  const source = markdown
    // Comments (places kept for later sections) are not shown.
    .replace(/<!--[\s\S]*?-->\n?/g, '')
    // Screenshots are files of the repository, not served: their description stays.
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '_Screenshot: $1_');
  const html = renderMarkdown(source);
  const seen = new Map<string, number>();
  return html
    .replace(/<h([1-6])>([\s\S]*?)<\/h\1>/g, (_, level: string, inner: string) => {
      const base = headingSlug(textOf(inner));
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      return `<h${level} id="${escapeHtml(n ? `${base}-${n}` : base)}">${inner}</h${level}>`;
    })
    .replace(/<a href="([^"]*)">([\s\S]*?)<\/a>/g, (whole, href: string, inner: string) => {
      const target = textOf(href);
      if (target.startsWith('#') || /^(https?|mailto):/i.test(target)) return whole;
      const page = /^([a-z]+)\.md(#.*)?$/.exec(target);
      if (page && PAGES.has(page[1]!))
        return `<a href="${escapeHtml(`${toPage}${page[1]}${page[2] ?? ''}`)}">${inner}</a>`;
      return inner;
    });
}

const sha256 = async (text: string) =>
  `'sha256-${bytesToBase64(new Uint8Array(await crypto.subtle.digest('SHA-256', utf8(text))))}'`;

/** The guides' policy: their one style, nothing else (no script, no image, no frame). */
async function guidePolicy() {
  return [
    "default-src 'none'",
    `style-src ${await sha256(GUIDE_STYLE)}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * A whole page: the header leads to the API page, the index and every guide. The paths are relative
 * (`toPage` to a guide, `toDocs` to /docs, `toIndex` to /docs/guide), so that the pages work under
 * the base path as at the root.
 */
function guideHtml(title: string, body: string, paths: { toPage: string; toDocs: string; toIndex: string }) {
  const { toPage, toDocs, toIndex } = paths;
  const nav = GUIDE_PAGES.map((p) => `<a href="${toPage}${p.name}">${escapeHtml(p.title)}</a>`).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style>${GUIDE_STYLE}</style>
</head>
<body>
<header>
<a href="${toDocs}">API</a>
<a href="${toIndex}">Guides</a>
${nav}
</header>
<main>
${body}
</main>
</body>
</html>
`;
}

function indexBody() {
  const items = GUIDE_PAGES.map(
    (p: GuidePage) => `<dt><a href="guide/${p.name}">${escapeHtml(p.title)}</a></dt>\n<dd>${renderSummary(p)}</dd>`,
  );
  return `<h1>${escapeHtml(PRODUCT)} Data Dissemination Service: guides</h1>
<p>The service's documentation, one page for each audience. The API's operations, with a form to try each,
are on <a href="../docs">the API page</a>; the OpenAPI description is <a href="../openapi.json">openapi.json</a>.</p>
<dl>
${items.join('\n')}
</dl>
`;
}

/** A page's first paragraph, as on the index (its links lead to the pages too). */
const renderSummary = (p: GuidePage) =>
  renderGuide(p.summary, 'guide/')
    .replace(/^<p>|<\/p>\n?$/g, '')
    .trim();

/** /docs/guide and /docs/guide/<page>: public, like /docs. */
export function guideRoutes(app: Hono<Env>) {
  const rendered = new Map<string, string>();
  let policy: string | null = null;

  const answer = async (html: string) => {
    policy ??= await guidePolicy();
    return new Response(html, {
      headers: {
        'content-type': 'text/html; charset=UTF-8',
        'content-security-policy': policy,
        'referrer-policy': 'no-referrer',
      },
    });
  };

  app.get('/docs/guide', (c) => {
    c.set('service', 'docs');
    const key = '';
    const paths = { toPage: 'guide/', toDocs: '../docs', toIndex: 'guide' };
    if (!rendered.has(key)) rendered.set(key, guideHtml(`${PRODUCT}: guides`, indexBody(), paths));
    return answer(rendered.get(key)!);
  });

  app.get('/docs/guide/:page', (c) => {
    c.set('service', 'docs');
    const page = PAGES.get(c.req.param('page'));
    if (!page) return plain(404, 'Not found');
    if (!rendered.has(page.name)) {
      const paths = { toPage: '', toDocs: '../../docs', toIndex: '../guide' };
      rendered.set(page.name, guideHtml(`${page.title} - ${PRODUCT}`, renderGuide(page.markdown, ''), paths));
    }
    return answer(rendered.get(page.name)!);
  });
}
