import type { MiddlewareHandler } from 'hono';
import { Page } from './layout.tsx';
import type { ConsoleEnv } from './session.ts';

/** Administration pages: a session is needed, and a category with console access. */
export const requireAdministrator: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
  const user = c.get('user');
  if (!user) return c.redirect('/console/login', 303);
  if (!user.canAdminister) {
    return c.html(
      <Page title="No access" user={user.userId} csrf={user.csrf}>
        <p>
          You are logged in as <strong>{user.userId}</strong>, but your account has no role that grants access to the
          console. Ask an administrator to assign one.
        </p>
      </Page>,
      403,
    );
  }
  await next();
};
