import type { Context, MiddlewareHandler } from 'hono';
import { notFoundAnswer } from './errors.ts';
import { PortalPage } from './layout.tsx';
import { pageHeaderValues } from './page-headers.ts';
import { DATA_BASE } from './who.ts';

/**
 * A browser's 404 under /portal: a page of the portal with the way back (the folder above, the
 * start), instead of the plain `Not found` that download tools and scripts keep getting.
 */
export function notFoundPage(path: string): Response {
  const up = folderAbove(path);
  const html = (
    <PortalPage title="Not found">
      <p>
        There is no file or folder at <code>{path}</code>: it may have expired or been removed, or the address may be
        mistyped.
      </p>
      <nav aria-label="The way back">
        <ul class="way-back">
          {up !== null && (
            <li>
              <a href={up}>Up to {up}</a>
            </li>
          )}
          <li>
            <a href="/portal/">Back to the start</a>
          </li>
        </ul>
      </nav>
    </PortalPage>
  );
  return new Response(`${html}`, {
    status: 404,
    headers: { 'content-type': 'text/html; charset=UTF-8', 'cache-control': 'no-store', ...pageHeaderValues() },
  });
}

/**
 * The app's answer under /portal when no route answered (the app's notFound, so that routes mounted
 * after the portal's still answer): `/portal/` leads to the start; anything else is not found, a
 * page for a browser. The start is the tree; a browser without a session goes on to the login
 * first (the tree sends it there), a tool gets a 401 asking for credentials.
 */
export function portalFallback(c: Context): Response {
  if (c.req.path === '/portal/' && (c.req.method === 'GET' || c.req.method === 'HEAD')) {
    return new Response(null, { status: 302, headers: { location: DATA_BASE } });
  }
  return wantsPage(c) ? notFoundPage(c.req.path) : notFoundAnswer();
}

/** Whether the request is a browser's, which reads pages (download tools ask for `*\/*`). */
export const wantsPage = (c: Context) =>
  (c.req.method === 'GET' || c.req.method === 'HEAD') && /\btext\/html\b/i.test(c.req.header('accept') ?? '');

/** Turns the tree's plain 404 into the page, for a browser. */
export const notFoundForBrowsers: MiddlewareHandler = async (c, next) => {
  await next();
  if (c.res.status !== 404 || !wantsPage(c) || !/^text\/plain\b/i.test(c.res.headers.get('content-type') ?? '')) return;
  // Hono keeps the plain answer's other headers (a cleared session cookie) on the page.
  c.res = notFoundPage(c.req.path);
};

/** The folder of the tree above a path (`/portal/data/D/a/b.txt` → `/portal/data/D/a/`), or null outside it. */
function folderAbove(path: string): string | null {
  const trimmed = path.endsWith('/') ? path.slice(0, -1) : path;
  const above = trimmed.slice(0, trimmed.lastIndexOf('/') + 1);
  return /^\/portal\/(data|home\/[^/]+)\//.test(above) ? above : null;
}
