import type { Context, Hono } from 'hono';
import { endSession, logout } from '../../../core/portal/sessions.ts';
import { Notice, PortalPage } from '../layout.tsx';
import { CSRF_REFUSED, clearPortalSession, type PortalSessionOptions, sessionToken } from '../session.ts';

/**
 * Logging out: the header's form posts with the session's CSRF token; `GET /portal/logout` (a link,
 * a bookmark, the address typed in) logs out too, unless the browser says another site sent it
 * (`Sec-Fetch-Site`), which only gets a page asking. Either way the browser ends on the page that
 * says it is logged out.
 */
export function logoutPages(app: Hono, options: PortalSessionOptions) {
  app.get('/logout', async (c) => {
    const token = await sessionToken(c, options.cookieSecret);
    if (token !== null && sentByAnotherSite(c)) return c.html(<AskFirst />);
    if (token !== null) await endSession(await options.portsFor(c), token);
    clearPortalSession(c);
    return c.html(<LoggedOut />);
  });

  app.post('/logout', async (c) => {
    const token = await sessionToken(c, options.cookieSecret);
    const body = await c.req.parseBody();
    if (token !== null && !(await logout(await options.portsFor(c), token, body.csrf))) {
      return c.text(CSRF_REFUSED, 403);
    }
    clearPortalSession(c);
    return c.redirect('/portal/logout', 303);
  });
}

/** Browsers name who started a request; older ones and tools say nothing, and are taken at their word. */
const sentByAnotherSite = (c: Context) => /^(cross-site|same-site)$/i.test(c.req.header('sec-fetch-site') ?? '');

const LoggedOut = () => (
  <PortalPage title="Logged out">
    <Notice>
      <p>You are logged out of the Data Portal.</p>
    </Notice>
    <p>
      <a href="/portal/login">Log in again</a>
    </p>
  </PortalPage>
);

const AskFirst = () => (
  <PortalPage title="Log out?">
    <p>Another site sent you here. Do you want to log out of the Data Portal?</p>
    <ul class="way-back">
      <li>
        <a href="/portal/logout">Log out</a>
      </li>
      <li>
        <a href="/portal/data/">No, back to your files</a>
      </li>
    </ul>
  </PortalPage>
);
