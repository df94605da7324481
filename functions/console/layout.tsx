import { raw } from 'hono/html';
import type { Child } from 'hono/jsx';

export interface PageProps {
  title: string;
  user?: string | null;
  csrf?: string;
  children?: Child;
}

const NAV: Array<[string, string]> = [
  ['/console/clients', 'API clients'],
  ['/console/users', 'Web users'],
  ['/console/incoming', 'Incoming users'],
  ['/console/fields', 'Metadata fields'],
  ['/console/audit', 'Audit trail'],
  ['/console/monitor/destinations', 'Destinations'],
  ['/console/monitor/products', 'Products'],
];

export function Page({ title, user, csrf, children }: PageProps) {
  return (
    <>
      {raw('<!doctype html>')}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{`${title} · ecpds-edge console`}</title>
          <link rel="stylesheet" href="/console/assets/console.css" />
        </head>
        <body>
          <header>
            <strong>ecpds-edge console</strong>
            {user && (
              <nav aria-label="Main">
                <ul>
                  {NAV.map(([href, label]) => (
                    <li>
                      <a href={href}>{label}</a>
                    </li>
                  ))}
                </ul>
              </nav>
            )}
            {user && csrf && (
              <form class="inline" method="post" action="/console/logout">
                <input type="hidden" name="csrf" value={csrf} />
                <span>{user} </span>
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
          <script src="/console/assets/console.js" defer></script>
        </body>
      </html>
    </>
  );
}

export const Csrf = ({ token }: { token: string }) => <input type="hidden" name="csrf" value={token} />;

export const ErrorNote = ({ message }: { message?: string | null }) =>
  message ? (
    <p class="error" role="alert">
      {message}
    </p>
  ) : null;
