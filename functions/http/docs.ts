import type { Hono } from 'hono';
import { bytesToBase64, utf8 } from '../../core/common/encoding.ts';
import { openApiDocument } from '../../core/openapi.ts';
import { PRODUCT } from '../../core/system/version.ts';
import type { Env } from './app.ts';
import { DOCS_SCRIPT, DOCS_STYLE, docsHtml } from './docs-page.ts';
import { guideRoutes } from './guide.ts';
import { GUIDE_PAGES } from './guide-pages.generated.ts';
import { opsPaths } from './ops.ts';

const docsPaths = {
  '/openapi.json': {
    get: {
      operationId: 'openapi',
      summary: 'This document',
      tags: ['none'],
      security: [],
      responses: {
        200: { description: 'OpenAPI 3.1 document', content: { 'application/json': { schema: { type: 'object' } } } },
        403: { $ref: '#/components/responses/NotSecure' },
      },
    },
  },
  '/docs': {
    get: {
      operationId: 'docs',
      summary: 'Interactive page: every operation, with a form to try it',
      tags: ['none'],
      security: [],
      responses: {
        200: { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } },
        403: { $ref: '#/components/responses/NotSecure' },
      },
    },
  },
  '/docs/guide': {
    get: {
      operationId: 'guide',
      summary: 'The guides of the service: an index of the pages',
      tags: ['none'],
      security: [],
      responses: {
        200: { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } },
        403: { $ref: '#/components/responses/NotSecure' },
      },
    },
  },
  '/docs/guide/{page}': {
    get: {
      operationId: 'guidePage',
      summary: 'One guide, rendered',
      tags: ['none'],
      security: [],
      parameters: [
        { name: 'page', in: 'path', required: true, schema: { type: 'string', enum: GUIDE_PAGES.map((p) => p.name) } },
      ],
      responses: {
        200: { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } },
        403: { $ref: '#/components/responses/NotSecure' },
        404: { description: 'No such page', content: { 'text/plain': { schema: { type: 'string' } } } },
      },
    },
  },
};

/** The base path the app serves besides the root (null: none), and the one these routes are under (null: root). */
export interface DocsMounts {
  base: string | null;
  mount: string | null;
}

/**
 * The document the app serves: the catalogue's operations plus the routes outside /v1. Its first
 * server is the mount it was fetched from, so the docs page and generated clients stay there.
 */
export function servedDocument(mounts: DocsMounts = { base: null, mount: null }) {
  const root = { url: '/', description: 'The root' };
  const servers =
    mounts.base === null
      ? [root]
      : [{ url: mounts.base, description: 'The base path (ECPDS_BASE_PATH), as the reference server' }, root];
  if (mounts.mount === null) servers.reverse();
  return openApiDocument({ extraPaths: { ...opsPaths, ...docsPaths }, servers });
}

const sha256 = async (text: string) =>
  `'sha256-${bytesToBase64(new Uint8Array(await crypto.subtle.digest('SHA-256', utf8(text))))}'`;

/** /openapi.json, /docs and the guides (/docs/guide): public, generated once per app on first use. */
export function docsRoutes(app: Hono<Env>, mounts?: DocsMounts) {
  let document: string | null = null;
  let page: { html: string; policy: string } | null = null;

  app.get('/openapi.json', (c) => {
    c.set('service', 'docs');
    document ??= JSON.stringify(servedDocument(mounts));
    return new Response(document, { headers: { 'content-type': 'application/json; charset=UTF-8' } });
  });

  app.get('/docs', async (c) => {
    c.set('service', 'docs');
    if (!page) {
      // Only this page's own script and style may run: hashes, not 'unsafe-inline'.
      const policy = [
        "default-src 'none'",
        `script-src ${await sha256(DOCS_SCRIPT)}`,
        `style-src ${await sha256(DOCS_STYLE)}`,
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
      ].join('; ');
      page = { html: docsHtml(`${PRODUCT} Data Dissemination API`), policy };
    }
    return new Response(page.html, {
      headers: {
        'content-type': 'text/html; charset=UTF-8',
        'content-security-policy': page.policy,
        'referrer-policy': 'no-referrer',
      },
    });
  });

  guideRoutes(app);
}
