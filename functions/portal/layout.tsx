import { raw } from 'hono/html';
import type { Child } from 'hono/jsx';

/**
 * The portal's pages: one shell, its one stylesheet and one script served by the app itself (no
 * external assets). Only a page that names its policy's nonce loads the script.
 */
export interface PortalPageProps {
  title: string;
  /** Who is logged in through a browser session, for the log-out form; none for Basic or open access. */
  session?: { login: string; csrf: string } | null;
  /** The nonce of the page's policy (page-headers.ts), for its script; none: no script. */
  scriptNonce?: string | null;
  children?: Child;
}

export function PortalPage({ title, session, scriptNonce, children }: PortalPageProps) {
  return (
    <>
      {raw('<!doctype html>')}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <meta name="referrer" content="no-referrer" />
          <title>{`${title} · Data Portal`}</title>
          <link rel="stylesheet" href="/portal/assets/portal.css" />
          {scriptNonce && <script src="/portal/assets/portal.js" nonce={scriptNonce} defer />}
        </head>
        <body>
          <header>
            {/* /portal/ leads to the files, or to the login first. */}
            <a class="brand" href="/portal/">
              Data Portal
            </a>
            {session && (
              <form class="inline" method="post" action="/portal/logout">
                <input type="hidden" name="csrf" value={session.csrf} />
                <span class="who">{session.login} </span>
                <button class="secondary" type="submit">
                  Log out
                </button>
              </form>
            )}
          </header>
          <main>
            <h1>{title}</h1>
            {children}
          </main>
        </body>
      </html>
    </>
  );
}

/** A failure the visitor can act on, read out by screen readers as it appears. */
export const ErrorNote = ({ message }: { message?: string | null }) =>
  message ? (
    <p class="error" role="alert">
      {message}
    </p>
  ) : null;

/** What happened, or what to do next. */
export const Notice = ({ children }: { children?: Child }) => (
  <div class="notice" role="status">
    {children}
  </div>
);
