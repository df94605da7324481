import type { Hono } from 'hono';
import { runOutput } from '../../../core/acquisition/output.ts';
import type { AcquisitionHostRuns, RunShown } from '../../../core/acquisition/ports.ts';
import { isServiceError } from '../../../core/common/errors.ts';
import type { ConsoleEnv } from '../session.ts';
import { monitorPage, when } from './monitor-parts.tsx';

const OUTCOME_LABELS = { done: 'Listed', failed: 'Failed', cut: 'Cut' };

const outputPath = (hostId: number) => `/console/monitor/hosts/${hostId}/output`;

const LastRun = ({ run }: { run: RunShown | null }) => {
  if (!run?.finishedAt) return <span class="muted">{run?.runningOn ? 'first run under way' : 'not listed yet'}</span>;
  return (
    <>
      <span class={run.outcome === 'done' ? 'ok-text' : 'error-text'}>{OUTCOME_LABELS[run.outcome]}</span>{' '}
      {when(run.finishedAt)}
      {run.runningOn && <small class="muted"> (running now on {run.runningOn})</small>}
    </>
  );
};

/** The Acquisition hosts of a destination: how each one's last run ended, when the next is due, its output. */
export const AcquisitionHosts = ({ hosts }: { hosts: AcquisitionHostRuns[] }) =>
  hosts.length === 0 ? null : (
    <>
      <h2>Acquisition</h2>
      <div class="table-wrap">
        <table class="monitor">
          <thead>
            <tr>
              <th scope="col">Host</th>
              <th scope="col">Last run</th>
              <th scope="col">Next run</th>
              <th scope="col">Output</th>
            </tr>
          </thead>
          <tbody>
            {hosts.map((h) => (
              <tr>
                <td>
                  {h.nickname ?? h.hostId} <span class="muted">({h.host || 'no address'})</span>
                  {!h.active && <small class="muted"> (inactive)</small>}
                </td>
                <td>
                  <LastRun run={h.run} />
                </td>
                <td>{when(h.run?.nextAt ?? null)}</td>
                <td>{h.run?.finishedAt ? <a href={outputPath(h.hostId)}>entries</a> : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );

/** `/console/monitor/hosts/:id/output`: an Acquisition host's last run, entry by entry, as `host output` prints it. */
export function monitorAcquisitionPage(app: Hono<ConsoleEnv>) {
  app.get('/monitor/hosts/:id/output', async (c) => {
    const id = c.req.param('id');
    const text = /^[1-9]\d{0,15}$/.test(id)
      ? await runOutput(c.get('ports'), Number(id)).catch((e: unknown) => {
          if (isServiceError(e) && e.kind === 'notFound') return null;
          throw e;
        })
      : null;
    if (text === null) return monitorPage(c, 'Not found', <p>Host {id} has no acquisition run.</p>, 404);
    return monitorPage(
      c,
      `Acquisition host ${id}`,
      <>
        <p>
          <a href="/console/monitor/destinations">All destinations</a>
        </p>
        <pre class="run-output">{text}</pre>
      </>,
    );
  });
}
