import type { Context, Hono } from 'hono';
import { raw } from 'hono/html';
import * as apiClients from '../../../core/api-clients/clients.ts';
import { SERVICE_NAMES } from '../../../core/catalogue.ts';
import { isServiceError } from '../../../core/common/errors.ts';
import { Csrf, ErrorNote, Page } from '../layout.tsx';
import type { ConsoleEnv } from '../session.ts';

type C = Context<ConsoleEnv>;
const page = (c: C, title: string, body: unknown, status: 200 | 400 | 404 = 200) =>
  c.html(
    <Page title={title} user={c.get('user')!.userId} csrf={c.get('user')!.csrf}>
      {body as never}
    </Page>,
    status,
  );

/** Checked services are saved as their exact names; the editor adds expressions of its own. */
function permissionsFrom(form: Record<string, unknown>): string[] {
  const checked = ([] as unknown[]).concat(form['service'] ?? []).map(String);
  const free = String(form.expressions ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return [...new Set([...checked.filter((s) => SERVICE_NAMES.includes(s)), ...free])];
}

function PermissionEditor({ permissions }: { permissions: string[] }) {
  const exact = new Set(permissions.filter((p) => SERVICE_NAMES.includes(p)));
  const free = permissions.filter((p) => !exact.has(p));
  return (
    <>
      <fieldset>
        <legend>Services</legend>
        <div class="checks">
          {SERVICE_NAMES.map((name) => (
            <label>
              <input type="checkbox" name="service" value={name} checked={exact.has(name)} /> {name}
            </label>
          ))}
        </div>
      </fieldset>
      <label for="expressions">Further expressions, one a line (matched against the whole service name)</label>
      <textarea id="expressions" name="expressions" aria-describedby="expressions-report">
        {free.join('\n')}
      </textarea>
      <ul id="expressions-report" class="report" aria-live="polite"></ul>
      {/* Script content is raw text to the HTML parser: entity-escaped JSON would not parse,
          so only `<` is escaped. */}
      <script type="application/json" id="service-names">
        {raw(JSON.stringify(SERVICE_NAMES).replace(/</g, '\\u003c'))}
      </script>
    </>
  );
}

/** A client removed meanwhile (another tab, the command line) gets a console page, not an API error. */
const notFoundPage = (c: C, username: string) => (e: unknown) => {
  if (isServiceError(e) && e.kind === 'notFound') return page(c, 'Not found', <p>No client named {username}.</p>, 404);
  throw e;
};

const SecretOnce = ({ username, secret }: { username: string; secret: string }) => (
  <>
    <p class="notice">
      The secret of <strong>{username}</strong> is shown this once. Store it now; only its hash is kept.
    </p>
    <p id="secret" class="secret">
      {secret}
    </p>
    <button type="button" class="secondary" data-copy="secret">
      Copy secret
    </button>
    <p>
      <a href={`/console/clients/${encodeURIComponent(username)}`}>Back to the client</a>
    </p>
  </>
);

export function clientPages(app: Hono<ConsoleEnv>) {
  app.get('/clients', async (c) => {
    const clients = await apiClients.list(c.get('ports'));
    return page(
      c,
      'API clients',
      <>
        <p>
          <a class="button" href="/console/clients/new">
            Create a client
          </a>
        </p>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Username</th>
                <th scope="col">Permissions</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
              </tr>
            </thead>
            <tbody>
              {clients.map((cl) => (
                <tr>
                  <td>
                    <a href={`/console/clients/${encodeURIComponent(cl.username)}`}>{cl.username}</a>
                  </td>
                  <td>{cl.permissions.join(', ') || '(none)'}</td>
                  <td>{cl.createdAt.slice(0, 16).replace('T', ' ')}</td>
                  <td>{cl.lastUsedAt ? cl.lastUsedAt.slice(0, 16).replace('T', ' ') : 'never'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </>,
    );
  });

  const newForm = (c: C, error?: string, username = '', permissions: string[] = []) =>
    page(
      c,
      'Create an API client',
      <form method="post" action="/console/clients">
        <ErrorNote message={error} />
        <Csrf token={c.get('user')!.csrf} />
        <label for="username">Username</label>
        <input id="username" name="username" type="text" required value={username} />
        <PermissionEditor permissions={permissions} />
        <button type="submit">Create</button>
      </form>,
      error ? 400 : 200,
    );

  app.get('/clients/new', (c) => newForm(c));

  app.post('/clients', async (c) => {
    const form = await c.req.parseBody({ all: true });
    const username = String(form.username ?? '').trim();
    const permissions = permissionsFrom(form);
    try {
      const created = await apiClients.create(c.get('ports'), c.get('user')!.userId, {
        username,
        permissions,
        origin: 'console',
      });
      return page(c, 'Client created', <SecretOnce username={created.username} secret={created.secret} />);
    } catch (e) {
      if (isServiceError(e)) return newForm(c, e.message, username, permissions);
      throw e;
    }
  });

  const editForm = async (c: C, username: string, error?: string, permissions?: string[]) => {
    const client = await apiClients.show(c.get('ports'), username).catch(() => null);
    if (!client) return page(c, 'Not found', <p>No client named {username}.</p>, 404);
    const csrf = c.get('user')!.csrf;
    const base = `/console/clients/${encodeURIComponent(username)}`;
    return page(
      c,
      `API client ${username}`,
      <>
        <ErrorNote message={error} />
        <dl>
          <dt>Created</dt>
          <dd>{client.createdAt}</dd>
          <dt>Updated</dt>
          <dd>{client.updatedAt}</dd>
          <dt>Last used</dt>
          <dd>{client.lastUsedAt ?? 'never'}</dd>
          <dt>Origin</dt>
          <dd>{client.origin}</dd>
        </dl>
        <form method="post" action={`${base}/permissions`}>
          <Csrf token={csrf} />
          <h2>Permissions</h2>
          <PermissionEditor permissions={permissions ?? client.permissions} />
          <button type="submit">Save permissions</button>
        </form>
        <h2>Secret and removal</h2>
        <div class="actions">
          <form method="post" action={`${base}/reset`}>
            <Csrf token={csrf} />
            <button type="submit" class="secondary">
              Reset secret
            </button>
          </form>
          <a class="button danger-link" href={`${base}/delete`}>
            Delete…
          </a>
        </div>
      </>,
      error ? 400 : 200,
    );
  };

  app.get('/clients/:username', (c) => editForm(c, c.req.param('username')));

  app.post('/clients/:username/permissions', async (c) => {
    const username = c.req.param('username');
    const permissions = permissionsFrom(await c.req.parseBody({ all: true }));
    try {
      await apiClients.setPermissions(c.get('ports'), c.get('user')!.userId, username, permissions);
      return c.redirect(`/console/clients/${encodeURIComponent(username)}`, 303);
    } catch (e) {
      if (isServiceError(e)) return editForm(c, username, e.message, permissions);
      throw e;
    }
  });

  app.post('/clients/:username/reset', async (c) => {
    const username = c.req.param('username');
    const reset = await apiClients
      .resetSecret(c.get('ports'), c.get('user')!.userId, username)
      .catch(notFoundPage(c, username));
    if (reset instanceof Response) return reset;
    return page(c, 'Secret reset', <SecretOnce username={reset.username} secret={reset.secret} />);
  });

  app.get('/clients/:username/delete', (c) => {
    const username = c.req.param('username');
    return page(
      c,
      `Delete ${username}?`,
      <form method="post" action={`/console/clients/${encodeURIComponent(username)}/delete`}>
        <Csrf token={c.get('user')!.csrf} />
        <p>Calls with this client's credentials stop working at once. This cannot be undone.</p>
        <button type="submit" class="danger">
          Delete {username}
        </button>{' '}
        <a href={`/console/clients/${encodeURIComponent(username)}`}>Cancel</a>
      </form>,
    );
  });

  app.post('/clients/:username/delete', async (c) => {
    const username = c.req.param('username');
    const gone = await apiClients
      .remove(c.get('ports'), c.get('user')!.userId, username)
      .catch(notFoundPage(c, username));
    if (gone instanceof Response) return gone;
    return c.redirect('/console/clients', 303);
  });
}
