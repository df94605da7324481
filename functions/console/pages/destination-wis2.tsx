import type { Hono } from 'hono';
import { isServiceError } from '../../../core/common/errors.ts';
import { openAccessUsers, setDestinationOption } from '../../../core/destinations/options.ts';
import { readOptions } from '../../../core/hosts/options.ts';
import type { Ports } from '../../../core/ports.ts';
import { isCoreTopic } from '../../../core/wis2/topic.ts';
import { Csrf } from '../layout.tsx';
import type { ConsoleEnv } from '../session.ts';
import { destinationPath } from './monitor-destinations.tsx';
import { withError } from './monitor-parts.tsx';

/** The destination page's WIS2 section: its topic, set or changed here as `ecpds-edge destination option` does. */

export interface Wis2View {
  topic: string | null;
  /** Its active open-access users: its files' links are public through the first. */
  openAccess: string[];
}

export async function wis2View(ports: Ports, name: string): Promise<Wis2View> {
  const destination = await ports.repos.destinations.get(name);
  const topic =
    readOptions(destination?.data ?? '')
      .get('wis2.topic')
      ?.trim() || null;
  return { topic, openAccess: await openAccessUsers(ports.repos, name) };
}

const Links = ({ view }: { view: Wis2View }) =>
  view.openAccess.length > 0 ? (
    <>
      Links are public, under <code>/portal/home/{view.openAccess[0]}/</code> (open-access user).
    </>
  ) : (
    <>
      Links take the portal's login: no active open-access incoming user is associated, so a <code>data/core</code>{' '}
      topic is refused.
    </>
  );

export const Wis2Topic = ({ name, view, csrf }: { name: string; view: Wis2View; csrf: string }) => (
  <section aria-labelledby="wis2">
    <h2 id="wis2">WIS2 notifications</h2>
    <p>
      {view.topic === null ? 'No topic: the destination publishes nothing.' : 'Files are announced on the topic.'}{' '}
      <Links view={view} />
      {view.topic !== null && isCoreTopic(view.topic) && view.openAccess.length === 0 && (
        <strong class="error-text"> Its notifications are held until one is associated.</strong>
      )}
    </p>
    <form class="filters" method="post" action={`${destinationPath(name)}/wis2/topic`}>
      <Csrf token={csrf} />
      <div>
        <label for="wis2-topic">Topic</label>
        <input
          id="wis2-topic"
          name="topic"
          type="text"
          size={60}
          value={view.topic ?? ''}
          placeholder="origin/a/wis2/<centre-id>/data/recommended/weather"
          aria-describedby="wis2-topic-help"
        />
        <small id="wis2-topic-help" class="muted">
          Empty: none. Checked against the WIS2 topic hierarchy when set.
        </small>
      </div>
      <button type="submit">Set topic</button>
    </form>
  </section>
);

/** Sets or removes (empty) the topic; a refusal comes back to the page as its error. */
export function destinationWis2Route(app: Hono<ConsoleEnv>) {
  app.post('/monitor/destinations/:name/wis2/topic', async (c) => {
    const name = c.req.param('name');
    const body = await c.req.parseBody();
    const topic = typeof body.topic === 'string' ? body.topic.trim() : '';
    const page = destinationPath(name);
    try {
      const value = topic === '' ? null : topic;
      await setDestinationOption(c.get('ports'), c.get('user')!.userId, name, 'wis2.topic', value);
    } catch (e) {
      if (isServiceError(e)) return c.redirect(`${withError(page, e.message)}#wis2`, 303);
      throw e;
    }
    return c.redirect(`${page}#wis2`, 303);
  });
}
