import type { TrafficBucket } from '../../../core/portal/admin.ts';
import type { Traffic } from '../../../core/portal/ports.ts';
import { bytes } from './monitor-parts.tsx';

/**
 * An incoming user's portal traffic per hour as inline SVG: bytes down and up side by side, drawn on
 * the server (no script, no style attribute, so the console's CSP holds), with the same numbers
 * as a table for screen readers and for anyone who wants the figures.
 */

const LEFT = 64;
const TOP = 8;
const PLOT_H = 140;
const GROUP_W = 28;
const BAR_W = 11;
const DOWN = '#0a58ca';
const UP = '#bc4c00';

const hourOf = (d: Date) => `${d.toISOString().slice(11, 13)}:00`;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** A round top for the scale (1, 2 or 5 times a power of 1024 bytes), so the grid reads easily. */
function scaleTop(most: number): number {
  if (most <= 0) return 1024;
  const power = 1024 ** Math.floor(Math.log(most) / Math.log(1024));
  const step = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1024].find((s) => s * power >= most)!;
  return step * power;
}

function Chart({ buckets, total }: { buckets: TrafficBucket[]; total: Traffic }) {
  const top = scaleTop(Math.max(0, ...buckets.flatMap((b) => [b.downloadBytes, b.uploadBytes])));
  const width = LEFT + buckets.length * GROUP_W + 8;
  const height = TOP + PLOT_H + 24;
  const y = (value: number) => TOP + PLOT_H - (value / top) * PLOT_H;
  const bar = (value: number) => (value === 0 ? 0 : Math.max(1, (value / top) * PLOT_H));
  const label =
    `Bytes downloaded and uploaded per hour over the last 24 hours: ${bytes(total.downloadBytes)} down, ` +
    `${bytes(total.uploadBytes)} up. The table below lists every hour.`;
  return (
    <svg class="traffic" viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={label}>
      {[0, 0.5, 1].map((f) => (
        <g>
          <line x1={LEFT} x2={width - 8} y1={y(top * f) + 0.5} y2={y(top * f) + 0.5} stroke="#d0d7de" />
          <text x={LEFT - 6} y={y(top * f) + 4} text-anchor="end" font-size="10" fill="#57606a">
            {bytes(top * f)}
          </text>
        </g>
      ))}
      {buckets.map((b, i) => {
        const x = LEFT + i * GROUP_W + 3;
        return (
          <g>
            <title>{`${hourOf(b.start)} UTC: ${bytes(b.downloadBytes)} down, ${bytes(b.uploadBytes)} up`}</title>
            {/* A transparent column under the bars, so the hour's tooltip shows on an empty hour too. */}
            <rect x={x - 3} y={TOP} width={GROUP_W} height={PLOT_H} fill="transparent" />
            <rect x={x} y={y(0) - bar(b.downloadBytes)} width={BAR_W} height={bar(b.downloadBytes)} fill={DOWN} />
            <rect x={x + BAR_W} y={y(0) - bar(b.uploadBytes)} width={BAR_W} height={bar(b.uploadBytes)} fill={UP} />
            {i % 3 === 0 && (
              <text x={x + BAR_W} y={TOP + PLOT_H + 16} text-anchor="middle" font-size="10" fill="#57606a">
                {hourOf(b.start)}
              </text>
            )}
          </g>
        );
      })}
    </svg>
  );
}

export function TrafficChart({ buckets, total }: { buckets: TrafficBucket[]; total: Traffic }) {
  return (
    <section aria-labelledby="traffic-heading">
      <h2 id="traffic-heading">Traffic over the last 24 hours</h2>
      <p>
        {`${bytes(total.downloadBytes)} down in ${plural(total.downloads, 'download')}, `}
        {`${bytes(total.uploadBytes)} up in ${plural(total.uploads, 'upload')} (hours in UTC).`}
      </p>
      <figure class="chart traffic-chart">
        <div class="table-wrap">
          <Chart buckets={buckets} total={total} />
        </div>
        <figcaption>
          <ul class="legend">
            <li>
              <span class="swatch swatch-down"></span> bytes downloaded
            </li>
            <li>
              <span class="swatch swatch-up"></span> bytes uploaded
            </li>
          </ul>
        </figcaption>
      </figure>
      <details>
        <summary>Traffic per hour as a table</summary>
        <div class="table-wrap">
          <table class="traffic-table">
            <caption class="visually-hidden">Portal traffic per hour, last 24 hours, UTC</caption>
            <thead>
              <tr>
                <th scope="col">Hour (UTC)</th>
                <th scope="col">Downloaded</th>
                <th scope="col">Downloads</th>
                <th scope="col">Uploaded</th>
                <th scope="col">Uploads</th>
              </tr>
            </thead>
            <tbody>
              {buckets.map((b) => (
                <tr>
                  <th scope="row">{`${b.start.toISOString().slice(0, 10)} ${hourOf(b.start)}`}</th>
                  <td>{bytes(b.downloadBytes)}</td>
                  <td>{b.downloads}</td>
                  <td>{bytes(b.uploadBytes)}</td>
                  <td>{b.uploads}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </section>
  );
}
