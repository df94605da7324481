import type { MiddlewareHandler } from 'hono';
import { generateSecret } from '../../core/common/crypto.ts';

/**
 * The portal's pages are about one person's files and forms: never framed, nothing from elsewhere
 * (the stylesheet is the app's own). A page with a script names it by a nonce made for that answer
 * alone, not by the origin: the origin also serves the files users upload. `connect-src 'self'` lets
 * that script send an upload with its progress.
 */
export function pagePolicy(nonce: string | null = null): string {
  const script = nonce === null ? '' : `script-src 'nonce-${nonce}'; connect-src 'self'; `;
  return (
    `default-src 'none'; ${script}style-src 'self'; img-src 'self'; form-action 'self'; ` +
    "frame-ancestors 'none'; base-uri 'none'"
  );
}

/** A fresh nonce for one page's script. */
export const scriptNonce = () => generateSecret();

/** The headers of every HTML page of the portal, with its policy. */
export const pageHeaderValues = (nonce: string | null = null) => ({
  'content-security-policy': pagePolicy(nonce),
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
});

/** The pages outside the tree (log in and out, registration): never cached either. */
export const pageHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  c.header('Cache-Control', 'no-store');
  for (const [name, value] of Object.entries(pageHeaderValues())) c.header(name, value);
  c.header('X-Frame-Options', 'DENY');
};
