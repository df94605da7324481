import type { Hono } from 'hono';
import { isServiceError } from '../../../core/common/errors.ts';
import { changePriority, PRIORITY_MAX, PRIORITY_MIN } from '../../../core/dissemination/priority.ts';
import { Csrf } from '../layout.tsx';
import type { ConsoleEnv } from '../session.ts';
import { backTo, withError } from './monitor-parts.tsx';

/** The priority of a transfer in its row of the destination's page, with a form to change it. */
export const PriorityForm = ({
  id,
  priority,
  csrf,
  back,
}: {
  id: number;
  priority: number;
  csrf: string;
  back: string;
}) => (
  <form class="inline priority" method="post" action={`/console/monitor/transfers/${id}/priority`}>
    <Csrf token={csrf} />
    <input type="hidden" name="back" value={back} />
    <input
      type="number"
      name="priority"
      min={PRIORITY_MIN}
      max={PRIORITY_MAX}
      step={1}
      value={String(priority)}
      required
      aria-label={`Priority of transfer ${id}`}
    />
    <button type="submit" class="secondary" aria-label={`Set the priority of transfer ${id}`}>
      Set priority
    </button>
  </form>
);

/** Registered before the page's other transfer actions: `priority` is not a status to set. */
export function transferPriorityRoute(app: Hono<ConsoleEnv>) {
  app.post('/monitor/transfers/:id/priority', async (c) => {
    const idText = c.req.param('id');
    if (!/^\d{1,15}$/.test(idText)) return c.notFound();
    const body = await c.req.parseBody();
    const back = backTo(body.back, '/console/monitor/destinations');
    const priority = typeof body.priority === 'string' ? body.priority : '';
    try {
      await changePriority(c.get('ports'), c.get('user')!.userId, Number(idText), priority);
    } catch (e) {
      if (isServiceError(e)) return c.redirect(withError(back, e.message), 303);
      throw e;
    }
    // A higher priority may make the transfer the next one due.
    c.get('ports').wakeMovers();
    return c.redirect(back, 303);
  });
}
