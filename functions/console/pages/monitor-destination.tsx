import type { Hono } from 'hono';
import { isServiceError } from '../../../core/common/errors.ts';
import {
  changeTransfer,
  manualChangeRefusal,
  TRANSFER_ACTIONS,
  type TransferAction,
} from '../../../core/dissemination/manual.ts';
import { destinationDetail, destinationStatus } from '../../../core/monitor/monitor.ts';
import type { MonitoredHost } from '../../../core/monitor/ports.ts';
import { Csrf, ErrorNote } from '../layout.tsx';
import type { ConsoleEnv } from '../session.ts';
import { destinationWis2Route, Wis2Topic, wis2View } from './destination-wis2.tsx';
import { AcquisitionHosts } from './monitor-acquisition.tsx';
import { Counts, CurrentHost, DestinationActions, destinationPath, LastError } from './monitor-destinations.tsx';
import { HostChecks } from './monitor-host-checks.tsx';
import { backTo, bytes, monitorPage, SentChart, Status, when, withError } from './monitor-parts.tsx';
import { PriorityForm, transferPriorityRoute } from './transfer-priority.tsx';

const TRANSFER_STATUSES = ['WAIT', 'RETR', 'INTR', 'EXEC', 'HOLD', 'STOP', 'FAIL', 'DONE'];
const ACTION_LABELS: Record<TransferAction, string> = { requeue: 'Requeue', hold: 'Hold', stop: 'Stop' };

const HostResult = ({ last }: { last: MonitoredHost['last'] }) =>
  !last ? (
    <span class="muted">not used yet</span>
  ) : (
    <>
      <span class={last.status === 'DONE' ? 'ok-text' : 'error-text'}>
        {last.status === 'DONE' ? 'Sent' : 'Failed'}
      </span>{' '}
      {when(last.at)}
      {last.status !== 'DONE' && last.comment && (
        <>
          <br />
          <span class="error-text">{last.comment}</span>
        </>
      )}
    </>
  );

export function monitorDestinationPage(app: Hono<ConsoleEnv>) {
  app.get('/monitor/destinations/:name', async (c) => {
    const name = c.req.param('name');
    const status = c.req.query('status') || undefined;
    const beforeText = c.req.query('before');
    const before = beforeText && /^\d{1,15}$/.test(beforeText) ? Number(beforeText) : undefined;
    const detail = await destinationDetail(c.get('ports'), name, { status, before }).catch((e) => {
      if (isServiceError(e) && e.kind === 'notFound') return null;
      throw e;
    });
    if (!detail) return monitorPage(c, 'Not found', <p>No destination named {name}.</p>, 404);
    const { destination: d, hosts, acquisition, transfers, next, hours } = detail;
    const csrf = c.get('user')!.csrf;
    const base = destinationPath(name);
    const listOf = (extra: Record<string, string>) => {
      const q = new URLSearchParams({ ...(status && { status }), ...extra });
      return `${base}${q.size ? `?${q}` : ''}`;
    };
    const here = listOf(before === undefined ? {} : { before: String(before) });
    const now = c.get('ports').clock().getTime();
    const wis2 = await wis2View(c.get('ports'), name);
    const checks = await c.get('ports').repos.hostChecks.ofDestination(name);
    return monitorPage(
      c,
      `Destination ${name}`,
      <>
        <ErrorNote message={c.req.query('error')} />
        <p>
          <a href="/console/monitor/destinations">All destinations</a>
        </p>
        <dl class="facts">
          <dt>Status</dt>
          <dd>
            <Status {...destinationStatus(d)} />
            {!d.active && <small class="muted"> (inactive)</small>}
          </dd>
          <dt>Current host</dt>
          <dd>
            <CurrentHost d={d} />
          </dd>
          <dt>Last success</dt>
          <dd>{when(d.lastSuccessAt)}</dd>
          <dt>Last error</dt>
          <dd>
            <LastError d={d} />
          </dd>
          <dt>Transfers</dt>
          <dd>
            <Counts counts={d.counts} />
          </dd>
        </dl>
        <DestinationActions d={d} csrf={csrf} back={here} />

        <h2>Hosts</h2>
        <div class="table-wrap">
          <table class="monitor">
            <thead>
              <tr>
                <th scope="col">Priority</th>
                <th scope="col">Host</th>
                <th scope="col">Method</th>
                <th scope="col">Last result</th>
              </tr>
            </thead>
            <tbody>
              {hosts.map((h, i) => (
                <tr class={h.hostId === d.lastHostId ? 'last-used' : ''}>
                  <td>{i === 0 ? 'primary' : `backup ${i}`}</td>
                  <td>
                    {h.nickname ?? h.hostId} <span class="muted">({h.host || 'no address'})</span>
                    {!h.active && <small class="muted"> (inactive)</small>}
                  </td>
                  <td>{h.method ?? '—'}</td>
                  <td>
                    <HostResult last={h.last} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {hosts.length === 0 && <p>No dissemination host.</p>}
        <AcquisitionHosts hosts={acquisition} />
        <HostChecks hosts={checks} />
        <Wis2Topic name={name} view={wis2} csrf={csrf} />

        <SentChart hours={hours} />

        <h2 id="transfers">Transfers</h2>
        <form class="filters" method="get" action={base}>
          <div>
            <label for="status">Status</label>
            <select id="status" name="status">
              <option value="">any</option>
              {TRANSFER_STATUSES.map((s) => (
                <option value={s} selected={s === status}>
                  {s}
                </option>
              ))}
            </select>
          </div>
          <button type="submit">Show</button>
        </form>
        <div class="table-wrap">
          <table class="monitor">
            <thead>
              <tr>
                <th scope="col">Id</th>
                <th scope="col">Target</th>
                <th scope="col">Status</th>
                <th scope="col">Size</th>
                <th scope="col">Scheduled</th>
                <th scope="col">History</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {transfers.map((t) => {
                const state = { status: t.status, deleted: false, expired: t.expiresAt.getTime() < now };
                const allowed = (Object.keys(TRANSFER_ACTIONS) as TransferAction[]).filter(
                  (a) => manualChangeRefusal(state, a) === null,
                );
                return (
                  <tr id={`transfer-${t.id}`}>
                    <td>{t.id}</td>
                    <td>
                      {t.target}
                      {t.message && (
                        <>
                          <br />
                          <small class="error-text">{t.message}</small>
                        </>
                      )}
                    </td>
                    <td>
                      <span class={`tstatus count-${t.status.toLowerCase()}`}>{t.status}</span>
                    </td>
                    <td>
                      {bytes(t.size)}
                      {(t.md5 || t.sha512) && (
                        <details class="sums">
                          <summary>Checksums</summary>
                          {t.md5 && (
                            <div>
                              MD5 <code>{t.md5}</code>
                            </div>
                          )}
                          {t.sha512 && (
                            <div>
                              SHA-512 <code>{t.sha512}</code>
                            </div>
                          )}
                        </details>
                      )}
                    </td>
                    <td>{when(t.scheduledAt)}</td>
                    <td>
                      <details>
                        <summary>{t.history.length} changes</summary>
                        <ol class="history">
                          {t.history.map((e) => (
                            <li class={e.error ? 'error-text' : ''}>
                              {when(e.at)} <strong>{e.status}</strong>
                              {e.hostId && ` on host ${e.hostId}`}
                              {e.sent > 0 && `, ${bytes(e.sent)}`}
                              {e.comment && ` — ${e.comment}`}
                            </li>
                          ))}
                        </ol>
                      </details>
                    </td>
                    <td>
                      <div class="row-actions">
                        {allowed.map((a) => (
                          <form class="inline" method="post" action={`/console/monitor/transfers/${t.id}/${a}`}>
                            <Csrf token={csrf} />
                            <input type="hidden" name="back" value={here} />
                            <button type="submit" class="secondary" aria-label={`${ACTION_LABELS[a]} transfer ${t.id}`}>
                              {ACTION_LABELS[a]}
                            </button>
                          </form>
                        ))}
                      </div>
                      <PriorityForm id={t.id} priority={t.priority} csrf={csrf} back={here} />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
        {transfers.length === 0 && <p>No transfer{status ? ` in ${status}` : ''}.</p>}
        <p class="actions">
          {before !== undefined && <a href={`${listOf({})}#transfers`}>Newest</a>}
          {next !== null && <a href={`${listOf({ before: String(next) })}#transfers`}>Older transfers</a>}
        </p>
      </>,
    );
  });

  transferPriorityRoute(app);
  destinationWis2Route(app);
  app.post('/monitor/transfers/:id/:action', async (c) => {
    const idText = c.req.param('id');
    const action = c.req.param('action');
    if (!/^\d{1,15}$/.test(idText) || !Object.hasOwn(TRANSFER_ACTIONS, action)) return c.notFound();
    const back = backTo((await c.req.parseBody()).back, '/console/monitor/destinations');
    try {
      await changeTransfer(c.get('ports'), c.get('user')!.userId, Number(idText), action as TransferAction);
    } catch (e) {
      if (isServiceError(e)) return c.redirect(withError(back, e.message), 303);
      throw e;
    }
    if (action === 'requeue') c.get('ports').wakeMovers();
    return c.redirect(back, 303);
  });
}
