import type { Hono } from 'hono';
import { productGrid, STATUS_LEVELS, type StepCell, stepHistory } from '../../../core/monitor/monitor.ts';
import type { ConsoleEnv } from '../session.ts';
import { monitorPage, when } from './monitor-parts.tsx';

const seconds = (s: number | null) => (s === null ? null : new Date(s * 1000));
const levelClass = (level: number) => `level level-${level < 0 ? 'none' : level}`;
const LEVEL_WORDS = new Map(STATUS_LEVELS);

const historyPath = (e: Pick<StepCell, 'product' | 'time' | 'step' | 'type'>) =>
  `/console/monitor/products/history?${new URLSearchParams({
    product: e.product,
    time: e.time,
    step: String(e.step),
    type: e.type,
  })}`;

const Legend = () => (
  <ul class="legend" aria-label="Legend">
    {STATUS_LEVELS.map(([level, words]) => (
      <li>
        <span class={levelClass(level)}>{level < 0 ? '–' : level}</span> {words}
      </li>
    ))}
  </ul>
);

const Cell = ({ e }: { e: StepCell }) => (
  <a
    class={levelClass(e.statusLevel)}
    href={historyPath(e)}
    title={`${e.type}: ${e.status}, ${LEVEL_WORDS.get(e.statusLevel) ?? ''}`}
  >
    {e.status}
    {e.type && <small> {e.type}</small>}
  </a>
);

export function monitorProductPages(app: Hono<ConsoleEnv>) {
  app.get('/monitor/products', async (c) => {
    const product = c.req.query('product')?.trim() || undefined;
    const time = c.req.query('time')?.trim() || undefined;
    const { steps, rows } = await productGrid(c.get('ports'), { product, time });
    return monitorPage(
      c,
      'Products',
      <>
        <form class="filters" method="get" action="/console/monitor/products">
          <div>
            <label for="product">Product</label>
            <input id="product" name="product" type="text" value={product ?? ''} />
          </div>
          <div>
            <label for="time">Time</label>
            <input id="time" name="time" type="text" value={time ?? ''} />
          </div>
          <button type="submit">Filter</button>
        </form>
        <Legend />
        {rows.length === 0 ? (
          <p>No product step has been notified{product || time ? ' for this filter' : ''}.</p>
        ) : (
          <div class="table-wrap">
            <table class="grid">
              <thead>
                <tr>
                  <th scope="col">Product</th>
                  <th scope="col">Time</th>
                  <th scope="col">Cycle (UTC)</th>
                  {steps.map((s) => (
                    <th scope="col">Step {s}</th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr>
                    <th scope="row">{r.product}</th>
                    <td>{r.time}</td>
                    <td>{when(seconds(r.productTime)).replace(' UTC', '').slice(0, 16)}</td>
                    {r.cells.map((cell) => (
                      <td>
                        {cell.map((e) => (
                          <Cell e={e} />
                        ))}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </>,
    );
  });

  app.get('/monitor/products/history', async (c) => {
    const q = c.req.query();
    const step = Number(q.step);
    if (!q.product || !q.time || !q.type || !/^-?\d{1,10}$/.test(q.step ?? '')) {
      return monitorPage(c, 'Step history', <p>A product, a time, a step and a type are needed.</p>, 400);
    }
    const filter = { product: q.product, time: q.time, step, type: q.type };
    const entries = await stepHistory(c.get('ports'), filter);
    return monitorPage(
      c,
      `${filter.product} ${filter.time} step ${step} (${filter.type})`,
      <>
        <p>
          <a href={`/console/monitor/products?${new URLSearchParams({ product: filter.product })}`}>
            Back to the products
          </a>
        </p>
        <Legend />
        <div class="table-wrap">
          <table class="monitor">
            <thead>
              <tr>
                <th scope="col">Notified</th>
                <th scope="col">Status</th>
                <th scope="col">Level</th>
                <th scope="col">Cycle</th>
                <th scope="col">Scheduled</th>
                <th scope="col">Minutes before schedule</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr>
                  <td>{when(seconds(e.lastUpdate))}</td>
                  <td>{e.status}</td>
                  <td>
                    <span class={levelClass(e.statusLevel)}>{e.statusLevel < 0 ? '–' : e.statusLevel}</span>{' '}
                    {LEVEL_WORDS.get(e.statusLevel)}
                  </td>
                  <td>{when(seconds(e.productTime))}</td>
                  <td>{when(seconds(e.scheduledTime))}</td>
                  <td>{e.minutesBeforeSchedule ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {entries.length === 0 && <p>No notification of this step.</p>}
      </>,
    );
  });
}
