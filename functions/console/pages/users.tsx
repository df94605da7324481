import type { Context, Hono } from 'hono';
import { invalid, isServiceError } from '../../../core/common/errors.ts';
import { keepsConsoleAccess, setActive, setCategory } from '../../../core/console/sign-in.ts';
import { Csrf, ErrorNote, Page } from '../layout.tsx';
import type { ConsoleEnv } from '../session.ts';

async function usersPage(c: Context<ConsoleEnv>, error?: string) {
  const ports = c.get('ports');
  const [users, categories] = await Promise.all([ports.repos.console.webUsers(), ports.repos.console.categories()]);
  const { userId, csrf } = c.get('user')!;
  return c.html(
    <Page title="Web users" user={userId} csrf={csrf}>
      <ErrorNote message={error} />
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">User</th>
              <th scope="col">Name</th>
              <th scope="col">Active</th>
              <th scope="col">Roles</th>
              <th scope="col">Change</th>
            </tr>
          </thead>
          <tbody>
            {users.map((u) => {
              const base = `/console/users/${encodeURIComponent(u.id)}`;
              const missing = categories.filter((cat) => !u.categories.includes(cat.id));
              return (
                <tr>
                  <th scope="row">{u.id}</th>
                  <td>{u.name ?? ''}</td>
                  <td>{u.active ? 'yes' : 'no'}</td>
                  <td>
                    {u.categories.length === 0
                      ? 'none'
                      : u.categories.map((cat) => (
                          <form class="inline" method="post" action={`${base}/revoke`}>
                            <Csrf token={csrf} />
                            <input type="hidden" name="category" value={cat} />
                            {cat}{' '}
                            <button type="submit" class="secondary" aria-label={`Remove role ${cat} from ${u.id}`}>
                              remove
                            </button>{' '}
                          </form>
                        ))}
                  </td>
                  <td>
                    <form class="inline" method="post" action={`${base}/active`}>
                      <Csrf token={csrf} />
                      <input type="hidden" name="active" value={u.active ? 'false' : 'true'} />
                      <button type="submit" class="secondary">
                        {u.active ? 'Deactivate' : 'Activate'}
                      </button>
                    </form>{' '}
                    {missing.length > 0 && (
                      <form class="inline" method="post" action={`${base}/grant`}>
                        <Csrf token={csrf} />
                        <label for={`grant-${u.id}`} class="visually-hidden">
                          Role to assign to {u.id}
                        </label>
                        <select id={`grant-${u.id}`} name="category">
                          {missing.map((cat) => (
                            <option value={cat.id}>{cat.label}</option>
                          ))}
                        </select>{' '}
                        <button type="submit">Assign</button>
                      </form>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </Page>,
    error ? 400 : 200,
  );
}

export function userPages(app: Hono<ConsoleEnv>) {
  app.get('/users', (c) => usersPage(c));

  const change =
    (work: (c: Context<ConsoleEnv>, form: Record<string, unknown>) => Promise<void>) =>
    async (c: Context<ConsoleEnv>) => {
      try {
        await work(c, await c.req.parseBody());
        return c.redirect('/console/users', 303);
      } catch (e) {
        if (isServiceError(e)) return usersPage(c, e.message);
        throw e;
      }
    };
  const actor = (c: Context<ConsoleEnv>) => c.get('user')!.userId;
  // An administrator cannot lock themself out here: another one (or the command line) must do it.
  app.post(
    '/users/:id/active',
    change(async (c, form) => {
      const active = form.active === 'true';
      if (!active && c.req.param('id') === actor(c)) throw invalid('You cannot deactivate your own account');
      await setActive(c.get('ports'), actor(c), c.req.param('id')!, active);
    }),
  );
  app.post(
    '/users/:id/grant',
    change((c, form) => setCategory(c.get('ports'), actor(c), c.req.param('id')!, String(form.category ?? ''), true)),
  );
  app.post(
    '/users/:id/revoke',
    change(async (c, form) => {
      const category = String(form.category ?? '');
      if (c.req.param('id') === actor(c) && !(await keepsConsoleAccess(c.get('ports'), actor(c), category))) {
        throw invalid(
          `Removing ${category} would end your own console access; ` +
            'another administrator or `ecpds-edge webuser revoke` can do it',
        );
      }
      await setCategory(c.get('ports'), actor(c), c.req.param('id')!, category, false);
    }),
  );
}
