import type { Context } from 'hono';
import type { Tone } from '../../../core/monitor/monitor.ts';
import type { HourOfSending } from '../../../core/monitor/ports.ts';
import { Page } from '../layout.tsx';
import type { ConsoleEnv } from '../session.ts';

export type C = Context<ConsoleEnv>;

export const monitorPage = (c: C, title: string, body: unknown, status: 200 | 400 | 404 = 200) =>
  c.html(
    <Page title={title} user={c.get('user')!.userId} csrf={c.get('user')!.csrf}>
      {body as never}
    </Page>,
    status,
  );

export const when = (d: Date | null) => (d ? `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC` : '—');

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
export function bytes(n: number) {
  let i = 0;
  let v = n;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${UNITS[i]}`;
}

export const Status = ({ code, label, tone }: { code: string; label: string; tone: Tone }) => (
  <span class={`status tone-${tone}`}>
    {label} <small>({code})</small>
  </span>
);

/** Where an action's form sends the operator back to: a monitor page only, never elsewhere. */
export const backTo = (value: unknown, fallback: string) =>
  typeof value === 'string' && /^\/console\/monitor\/[^/\\]/.test(value) ? value : fallback;

/** `?error=` carried back by a redirect after a refused action; escaped like any text. */
export const withError = (path: string, message: string) =>
  `${path}${path.includes('?') ? '&' : '?'}error=${encodeURIComponent(message)}`;

const W = 18;
const H = 60;

/** Bars per hour as inline SVG: no script and no style attribute, so the console's CSP holds. */
function Bars({
  hours,
  value,
  label,
  unit,
}: {
  hours: HourOfSending[];
  value: (h: HourOfSending) => number;
  label: string;
  unit: (n: number) => string;
}) {
  const most = Math.max(1, ...hours.map(value));
  const width = hours.length * W;
  return (
    <figure class="chart">
      <figcaption>{label}</figcaption>
      <svg viewBox={`0 0 ${width} ${H + 14}`} width={width} height={H + 14} role="img" aria-label={label}>
        <line x1="0" y1={H + 0.5} x2={width} y2={H + 0.5} stroke="#d0d7de" />
        {hours.map((h, i) => {
          const v = value(h);
          const height = v === 0 ? 0 : Math.max(1, Math.round((v / most) * (H - 2)));
          return (
            <g>
              <title>{`${h.hour.toISOString().slice(11, 13)}:00 UTC: ${unit(v)}`}</title>
              <rect x={i * W + 2} y={H - height} width={W - 4} height={height} fill="#0a58ca" />
              {i % 3 === 0 && (
                <text x={i * W + W / 2} y={H + 12} text-anchor="middle" font-size="9" fill="#57606a">
                  {h.hour.toISOString().slice(11, 13)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
    </figure>
  );
}

export function SentChart({ hours }: { hours: HourOfSending[] }) {
  const total = hours.reduce((t, h) => ({ bytes: t.bytes + h.bytes, files: t.files + h.files }), {
    bytes: 0,
    files: 0,
  });
  return (
    <section aria-labelledby="sent-heading">
      <h2 id="sent-heading">Sent over the last 24 hours</h2>
      <p>
        {bytes(total.bytes)} in {total.files} file{total.files === 1 ? '' : 's'} (hours in UTC).
      </p>
      <div class="charts">
        <Bars hours={hours} value={(h) => h.bytes} label="Bytes per hour" unit={bytes} />
        <Bars hours={hours} value={(h) => h.files} label="Files per hour" unit={(n) => `${n} files`} />
      </div>
    </section>
  );
}
