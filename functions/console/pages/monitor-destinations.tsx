import type { Hono } from 'hono';
import { isServiceError } from '../../../core/common/errors.ts';
import { DESTINATION_STATUS_LABELS } from '../../../core/dissemination/destination-status.ts';
import {
  DESTINATION_ACTIONS,
  type DestinationAction,
  setDestinationStatus,
} from '../../../core/dissemination/operator.ts';
import { currentHost, destinationPage, destinationStatus, storeSummary } from '../../../core/monitor/monitor.ts';
import type { DestinationOverview } from '../../../core/monitor/ports.ts';
import { Csrf, ErrorNote } from '../layout.tsx';
import type { ConsoleEnv } from '../session.ts';
import { backTo, monitorPage, Status, when, withError } from './monitor-parts.tsx';

export const destinationPath = (name: string) => `/console/monitor/destinations/${encodeURIComponent(name)}`;

const ACTION_LABELS: Record<DestinationAction, string> = { start: 'Start', hold: 'Hold', stop: 'Stop' };

/** Start, hold and stop, each a form of its own; the one matching what is stored is left out. */
export function DestinationActions({ d, csrf, back }: { d: DestinationOverview; csrf: string; back: string }) {
  const actions = (Object.keys(DESTINATION_ACTIONS) as DestinationAction[]).filter(
    (a) => DESTINATION_ACTIONS[a] !== d.statusCode && !(a === 'start' && d.statusCode === 'EXEC'),
  );
  return (
    <div class="row-actions">
      {actions.map((a) => (
        <form class="inline" method="post" action={`${destinationPath(d.name)}/${a}`}>
          <Csrf token={csrf} />
          <input type="hidden" name="back" value={back} />
          <button type="submit" class={a === 'start' ? '' : 'secondary'} aria-label={`${ACTION_LABELS[a]} ${d.name}`}>
            {ACTION_LABELS[a]}
          </button>
        </form>
      ))}
    </div>
  );
}

/** What the service keeps of the registered files, so that an operator sees the store grow or shrink. */
const StoreLine = ({ description, objects, bytes }: { description: string; objects: number; bytes: number }) => (
  <p class="muted" data-store>
    Store ({description}): <strong>{objects}</strong> {objects === 1 ? 'object' : 'objects'},{' '}
    <strong>{bytes.toLocaleString('en')}</strong> bytes
  </p>
);

export const Counts = ({ counts }: { counts: Record<string, number> }) => {
  const entries = Object.entries(counts).sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? (
    <span class="muted">none</span>
  ) : (
    <ul class="counts">
      {entries.map(([status, n]) => (
        <li class={`count-${status.toLowerCase()}`}>
          {status} <strong>{n}</strong>
        </li>
      ))}
    </ul>
  );
};

export function CurrentHost({ d }: { d: DestinationOverview }) {
  const host = currentHost(d);
  if (!host) return <span class="muted">no active host</span>;
  const position = d.hosts.indexOf(host) + 1;
  return (
    <>
      {host.nickname ?? host.hostId} <span class="muted">({host.host || 'no address'})</span>
      <br />
      <small class="muted">
        {position === 1 ? 'primary' : `backup ${position - 1}`} of {d.hosts.length}
      </small>
    </>
  );
}

export const LastError = ({ d }: { d: DestinationOverview }) =>
  d.lastErrorAt ? (
    <>
      {when(d.lastErrorAt)}
      <br />
      <span class="error-text">{d.lastError}</span>
    </>
  ) : (
    <span class="muted">never</span>
  );

export function monitorDestinationPages(app: Hono<ConsoleEnv>) {
  app.get('/monitor/destinations', async (c) => {
    const prefix = c.req.query('prefix')?.trim() || undefined;
    const shown = c.req.query('shown') || undefined;
    const after = c.req.query('after') || undefined;
    const { destinations, next } = await destinationPage(c.get('ports'), { prefix, shown, after });
    const csrf = c.get('user')!.csrf;
    const keep = (extra: Record<string, string>) => {
      const q = new URLSearchParams({ ...(prefix && { prefix }), ...(shown && { shown }), ...extra });
      return `/console/monitor/destinations${q.size ? `?${q}` : ''}`;
    };
    const here = keep(after ? { after } : {});
    const store = await storeSummary(c.get('ports'));
    return monitorPage(
      c,
      'Destinations',
      <>
        <ErrorNote message={c.req.query('error')} />
        {store && <StoreLine {...store} />}
        <form class="filters" method="get" action="/console/monitor/destinations">
          <div>
            <label for="prefix">Name starts with</label>
            <input id="prefix" name="prefix" type="text" value={prefix ?? ''} />
          </div>
          <div>
            <label for="shown">Status</label>
            <select id="shown" name="shown">
              <option value="">any</option>
              {Object.entries(DESTINATION_STATUS_LABELS).map(([code, label]) => (
                <option value={code} selected={code === shown}>
                  {label} ({code})
                </option>
              ))}
            </select>
          </div>
          <button type="submit">Filter</button>
        </form>
        <div class="table-wrap">
          <table class="monitor">
            <thead>
              <tr>
                <th scope="col">Destination</th>
                <th scope="col">Status</th>
                <th scope="col">Transfers</th>
                <th scope="col">Current host</th>
                <th scope="col">Last success</th>
                <th scope="col">Last error</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {destinations.map((d) => (
                <tr>
                  <td>
                    <a href={destinationPath(d.name)}>{d.name}</a>
                    {!d.active && <small class="muted"> (inactive)</small>}
                  </td>
                  <td>
                    <Status {...destinationStatus(d)} />
                  </td>
                  <td>
                    <Counts counts={d.counts} />
                  </td>
                  <td>
                    <CurrentHost d={d} />
                  </td>
                  <td>{d.lastSuccessAt ? when(d.lastSuccessAt) : <span class="muted">never</span>}</td>
                  <td>
                    <LastError d={d} />
                  </td>
                  <td>
                    <DestinationActions d={d} csrf={csrf} back={here} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {destinations.length === 0 && <p>No destination matches.</p>}
        <p class="actions">
          {after && <a href={keep({})}>First page</a>}
          {next && <a href={keep({ after: next })}>Next page</a>}
        </p>
      </>,
    );
  });

  app.post('/monitor/destinations/:name/:action', async (c) => {
    const name = c.req.param('name');
    const action = c.req.param('action');
    const back = backTo((await c.req.parseBody()).back, destinationPath(name));
    if (!Object.hasOwn(DESTINATION_ACTIONS, action)) return c.notFound();
    try {
      await setDestinationStatus(c.get('ports'), c.get('user')!.userId, name, action as DestinationAction);
    } catch (e) {
      if (isServiceError(e)) return c.redirect(withError(back, e.message), 303);
      throw e;
    }
    c.get('ports').wakeMovers();
    return c.redirect(back, 303);
  });
}
