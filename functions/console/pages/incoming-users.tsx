import type { Context, Hono } from 'hono';
import { isServiceError, type ServiceError } from '../../../core/common/errors.ts';
import * as portalAdmin from '../../../core/portal/admin.ts';
import * as keyAdmin from '../../../core/portal/key-admin.ts';
import { ErrorNote } from '../layout.tsx';
import type { ConsoleEnv } from '../session.ts';
import { KeysTable } from './incoming-keys.tsx';
import {
  incomingPath,
  MODE_HELP,
  OptionsTable,
  PermissionsForm,
  type RefusedOption,
  SubscribersTable,
} from './incoming-parts.tsx';
import { destinationPath } from './monitor-destinations.tsx';
import { monitorPage as page, when } from './monitor-parts.tsx';
import { TrafficChart } from './traffic-chart.tsx';

type C = Context<ConsoleEnv>;

/** What a redirect after a change says it did: fixed texts, so nothing from the address is echoed. */
const DONE: Record<string, string> = {
  permissions: 'Permissions saved.',
  option: 'Option saved.',
  approved: 'Subscriber approved: its password was e-mailed to it.',
  revoked: 'Subscriber revoked: its password opens nothing any more.',
  keyAdded: 'Key added.',
  keyRemoved: 'Key removed: it opens nothing any more.',
};

const isNotFound = (e: unknown): e is ServiceError => isServiceError(e) && e.kind === 'notFound';

async function listPage(c: C) {
  const q = (c.req.query('q') ?? '').trim();
  const all = await c.get('ports').repos.incomingUsers.list({});
  const needle = q.toLowerCase();
  const users = q
    ? all.filter((u) => u.id.toLowerCase().includes(needle) || u.email.toLowerCase().includes(needle))
    : all;
  return page(
    c,
    'Incoming users',
    <>
      <p>Data consumers and publishers: how each logs in to the data portal, and what it may do there.</p>
      <form class="filters" method="get" action="/console/incoming">
        <div>
          <label for="q">User or e-mail contains</label>
          <input id="q" name="q" type="text" value={q} />
        </div>
        <button type="submit">Filter</button>
      </form>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">User</th>
              <th scope="col">E-mail</th>
              <th scope="col">Portal mode</th>
              <th scope="col">Active</th>
              <th scope="col">Destinations</th>
              <th scope="col">Last login</th>
            </tr>
          </thead>
          <tbody>
            {users.map((u) => (
              <tr>
                <th scope="row">
                  <a href={incomingPath(u.id)}>{u.id}</a>
                </th>
                <td>{u.email}</td>
                <td>{u.portalService}</td>
                <td>{u.active ? 'yes' : 'no'}</td>
                <td>{u.associations.length === 0 ? 'none' : u.associations.join(', ')}</td>
                <td>{u.lastLoginDate ? when(u.lastLoginDate) : 'never'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p class="muted">
        {users.length === all.length ? `${all.length} users.` : `${users.length} of ${all.length} users.`}
      </p>
    </>,
  );
}

async function userPage(c: C, id: string, problem?: { error: string; refused?: RefusedOption }) {
  const account = await portalAdmin.portalAccount(c.get('ports'), id).catch((e) => {
    if (isNotFound(e)) return null;
    throw e;
  });
  if (!account) return page(c, 'Not found', <p>No incoming user named {id}.</p>, 404);
  const { user, destinations, permissions, options, subscribers, lastLogin, traffic } = account;
  const keys = await keyAdmin.listKeys(c.get('ports'), id);
  const csrf = c.get('user')!.csrf;
  const done = DONE[c.req.query('done') ?? ''];
  const inRow = problem?.refused !== undefined && options.some((o) => o.name === problem.refused!.name);
  return page(
    c,
    `Incoming user ${id}`,
    <>
      <p>
        <a href="/console/incoming">All incoming users</a>
      </p>
      {/* An option's refusal is shown in its row, beside the value that was refused. */}
      <ErrorNote message={inRow ? `${problem!.refused!.name} was not saved: see below` : problem?.error} />
      {done && !problem && (
        <p class="notice" role="status">
          {done}
        </p>
      )}
      <dl class="facts">
        <dt>Portal mode</dt>
        <dd>
          <strong>{user.portalService}</strong> <span class="muted">— {MODE_HELP[user.portalService]}</span>
        </dd>
        <dt>Active</dt>
        <dd>{user.active ? 'yes' : <span class="error-text">no: the user cannot log in</span>}</dd>
        <dt>E-mail</dt>
        <dd>{user.email}</dd>
        <dt>Country</dt>
        <dd>{user.iso}</dd>
        <dt>Last login</dt>
        <dd>{lastLogin ? `${when(lastLogin.at)} from ${lastLogin.address ?? 'an unknown address'}` : 'never'}</dd>
        <dt>Destinations</dt>
        <dd>
          {destinations.length === 0 ? (
            <span class="error-text">none: the user cannot log in</span>
          ) : (
            <ul class="inline-list">
              {destinations.map((d) => (
                <li>
                  <a href={destinationPath(d)}>{d}</a>
                </li>
              ))}
            </ul>
          )}
        </dd>
      </dl>
      <PermissionsForm id={id} csrf={csrf} granted={permissions} />
      <OptionsTable id={id} csrf={csrf} options={options} refused={inRow ? problem!.refused : undefined} />
      <SubscribersTable id={id} csrf={csrf} mode={user.portalService} subscribers={subscribers} />
      <KeysTable id={id} csrf={csrf} mode={user.portalService} keys={keys} />
      <TrafficChart buckets={traffic.buckets} total={traffic.total} />
    </>,
    problem ? 400 : 200,
  );
}

/**
 * Runs a change from a form; a refused one shows the page again with why (400), a vanished user
 * its 404, and a done one goes back to the page's section (303), so a reload posts nothing again.
 */
const change =
  (
    section: string,
    done: string,
    work: (c: C, id: string, form: Record<string, unknown>) => Promise<unknown>,
    refusedOption?: (form: Record<string, unknown>, message: string) => RefusedOption,
  ) =>
  async (c: C) => {
    const id = c.req.param('id')!;
    const form = await c.req.parseBody({ all: true });
    try {
      await work(c, id, form);
    } catch (e) {
      if (!isServiceError(e)) throw e;
      if (isNotFound(e) && !(await c.get('ports').repos.incomingUsers.find(id))) return userPage(c, id);
      return userPage(c, id, { error: e.message, refused: refusedOption?.(form, e.message) });
    }
    return c.redirect(`${incomingPath(id)}?done=${done}#${section}`, 303);
  };

const actor = (c: C) => c.get('user')!.userId;
const subscriberId = (c: C) => {
  const text = c.req.param('subscriber') ?? '';
  return /^[1-9]\d{0,15}$/.test(text) ? Number(text) : 0;
};

export function incomingUserPages(app: Hono<ConsoleEnv>) {
  app.get('/incoming', listPage);
  app.get('/incoming/:id', (c) => userPage(c, c.req.param('id')));

  app.post(
    '/incoming/:id/permissions',
    change('permissions', 'permissions', (c, id, form) => {
      const checked = ([] as unknown[]).concat(form.operation ?? []).map(String);
      return portalAdmin.setPermissions(c.get('ports'), actor(c), id, checked);
    }),
  );

  app.post(
    '/incoming/:id/options',
    change(
      'options',
      'option',
      (c, id, form) => {
        const value = form.action === 'remove' ? null : String(form.value ?? '');
        return portalAdmin.setOption(c.get('ports'), actor(c), id, String(form.name ?? ''), value);
      },
      (form, message) => ({ name: String(form.name ?? ''), value: String(form.value ?? ''), message }),
    ),
  );

  app.post(
    '/incoming/:id/keys',
    change('keys', 'keyAdded', (c, id, form) => keyAdmin.addKey(c.get('ports'), actor(c), id, String(form.key ?? ''))),
  );
  app.post(
    '/incoming/:id/keys/remove',
    change('keys', 'keyRemoved', (c, id, form) =>
      keyAdmin.removeKey(c.get('ports'), actor(c), id, String(form.fingerprint ?? '')),
    ),
  );

  app.post(
    '/incoming/:id/subscribers/:subscriber/approve',
    change('subscribers', 'approved', (c, id) => portalAdmin.approve(c.get('ports'), actor(c), id, subscriberId(c))),
  );
  app.post(
    '/incoming/:id/subscribers/:subscriber/revoke',
    change('subscribers', 'revoked', (c, id) => portalAdmin.revoke(c.get('ports'), actor(c), id, subscriberId(c))),
  );
}
