import { checkIntervalMs, nextCheckAt } from '../../../core/host-checks/policy.ts';
import type { HostCheckShown } from '../../../core/host-checks/ports.ts';
import { when } from './monitor-parts.tsx';

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;

const Every = ({ ms }: { ms: number }) => {
  const minutes = ms / 60_000;
  return <>{Number.isInteger(minutes) ? `${minutes} min` : seconds(ms)}</>;
};

/** The latest result of a host's check, with the earlier ones behind a disclosure. */
const Latest = ({ h }: { h: HostCheckShown }) => {
  if (!h.latest) return <span class="muted">{h.runningSince ? 'first check under way' : 'not checked yet'}</span>;
  const { latest } = h;
  return (
    <>
      <span class={latest.ok ? 'ok-text' : 'error-text'}>{latest.ok ? 'OK' : 'Failed'}</span> {when(latest.at)}
      <br />
      <span class={latest.ok ? 'muted' : 'error-text'}>{latest.message}</span>
      {h.history.length > 0 && (
        <details>
          <summary>Earlier checks ({h.history.length})</summary>
          <ul>
            {h.history.map((r) => (
              <li>
                <span class={r.ok ? 'ok-text' : 'error-text'}>{r.ok ? 'OK' : 'Failed'}</span> {when(r.at)},{' '}
                {seconds(r.durationMs)}
                {!r.ok && <> — {r.message}</>}
              </li>
            ))}
          </ul>
        </details>
      )}
    </>
  );
};

/** Due from when the latest check began, as the runner judges it (the one under way is not shown twice). */
const Next = ({ h }: { h: HostCheckShown }) => {
  if (!h.check) return <>—</>;
  if (h.runningSince) return <>under way</>;
  const next = nextCheckAt(h.latest?.at ?? null, h.checkFrequency);
  return <>{next === null ? 'due now' : when(next)}</>;
};

/** A destination's checked hosts: each one's latest check (when, ok or failed, how long, what it said). */
export const HostChecks = ({ hosts }: { hosts: HostCheckShown[] }) =>
  hosts.length === 0 ? null : (
    <>
      <h2 id="host-checks">Host checks</h2>
      <div class="table-wrap">
        <table class="monitor host-checks">
          <thead>
            <tr>
              <th scope="col">Host</th>
              <th scope="col">Every</th>
              <th scope="col">Latest check</th>
              <th scope="col">Duration</th>
              <th scope="col">Next check</th>
            </tr>
          </thead>
          <tbody>
            {hosts.map((h) => (
              <tr data-host={String(h.hostId)}>
                <td>
                  {h.nickname ?? h.hostId} <span class="muted">({h.host || 'no address'})</span>
                  {h.method && <small class="muted"> {h.method}</small>}
                  {!h.check && <small class="muted"> (check off)</small>}
                </td>
                <td>
                  <Every ms={checkIntervalMs(h.checkFrequency)} />
                  {h.checkFilename && <small class="muted"> writes {h.checkFilename}</small>}
                </td>
                <td>
                  <Latest h={h} />
                </td>
                <td>{h.latest ? seconds(h.latest.durationMs) : '—'}</td>
                <td>
                  <Next h={h} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
