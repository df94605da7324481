import { Hono } from 'hono';
import { PORTAL_CSS } from './assets.ts';
import { portalError } from './errors.ts';
import { notFoundForBrowsers } from './not-found.tsx';
import type { PortalOptions } from './options.ts';
import { s3Routes } from './s3/index.ts';
import { PORTAL_SCRIPT } from './script.ts';
import { serveTree } from './tree-routes.ts';
import { DATA_BASE, dataVisitor, openAccessVisitor } from './who.ts';

export type { PortalOptions } from './options.ts';
export type { ReceivedUpload, UploadStore } from './upload.ts';

const HOME_BASE = '/portal/home/';

/**
 * The data portal over HTTPS, served by the same app under /portal: incoming users' files as a tree
 * (`/portal/data/`, Basic or a browser session; `/portal/home/<user>/` for open access), listed,
 * downloaded, uploaded and deleted.
 */
export function portalApp(options: PortalOptions) {
  const app = new Hono();
  const asset = (body: string, type: string) => () =>
    new Response(body, { headers: { 'content-type': type, 'cache-control': 'public, max-age=3600' } });
  app.get('/assets/portal.css', asset(PORTAL_CSS, 'text/css; charset=utf-8'));
  app.get('/assets/portal.js', asset(PORTAL_SCRIPT, 'text/javascript; charset=utf-8'));
  // The portal's own address leads to the files (`/portal/`, a path of its own under strict routing,
  // is the app's fallback: portalFallback).
  app.get('/', () => found(DATA_BASE));

  // The S3 endpoint answers its own errors, in S3's XML.
  app.route('/', s3Routes(options));

  app.use('/data/*', notFoundForBrowsers);
  app.use('/home/*', notFoundForBrowsers);
  app.all('/data', () => redirect(DATA_BASE));
  app.all('/data/*', async (c) => {
    const ports = await options.portsFor(c);
    const visitor = await dataVisitor(c, ports, options);
    return serveTree(c, options, ports, visitor, rawPath(c.req.url).slice(DATA_BASE.length));
  });
  app.all('/home/:user', (c) => redirect(`${rawPath(c.req.url)}/`));
  app.all('/home/:user/*', async (c) => {
    const path = rawPath(c.req.url).slice(HOME_BASE.length);
    const slash = path.indexOf('/');
    let user: string;
    try {
      user = decodeURIComponent(path.slice(0, slash));
    } catch {
      return new Response('Invalid path', { status: 400 });
    }
    const ports = await options.portsFor(c);
    const visitor = await openAccessVisitor(c, ports, options, user);
    return serveTree(c, options, ports, visitor, path.slice(slash + 1));
  });

  app.onError(async (error, c) => {
    const ports = await options.portsFor(c);
    return portalError(error, (c.get('requestId' as never) as string | undefined) ?? 'unknown', ports.logger);
  });
  return app;
}

/** The path as the client sent it, still percent-encoded: each segment is decoded once, by the tree. */
const rawPath = (url: string) => new URL(url).pathname;

const redirect = (location: string) => new Response(null, { status: 301, headers: { location } });
/** A redirect that is not remembered: where the start leads may change. */
const found = (location: string) => new Response(null, { status: 302, headers: { location } });
