import { notFound } from '../common/errors.ts';
import { shownStatusCode } from '../destinations/model.ts';
import { DESTINATION_STATUS_LABELS } from '../dissemination/destination-status.ts';
import { stepEntry } from '../monitoring/model.ts';
import type { Ports } from '../ports.ts';
import type { DestinationOverview, DestinationPage, HourOfSending, TransferPage } from './ports.ts';

export const DESTINATIONS_PER_PAGE = 50;
export const TRANSFERS_PER_PAGE = 50;
const HOUR_MS = 3_600_000;

/** How a shown status reads at a glance: the console colours each tone. */
export type Tone = 'ok' | 'busy' | 'idle' | 'warn' | 'bad' | 'off';
const TONES: Record<string, Tone> = {
  EXEC: 'ok',
  DONE: 'ok',
  SCHE: 'busy',
  FETC: 'busy',
  WAIT: 'idle',
  RETR: 'warn',
  IDLE: 'warn',
  INTR: 'warn',
  RSTR: 'warn',
  HOLD: 'bad',
  FAIL: 'bad',
  STOP: 'off',
  INIT: 'off',
};

export const destinationStatus = (d: Pick<DestinationOverview, 'statusCode' | 'schedulerStatus'>) => {
  const code = shownStatusCode(d);
  return { code, label: DESTINATION_STATUS_LABELS[code] ?? code, tone: TONES[code] ?? ('off' as Tone) };
};

/** The host the movers use next: the ring's index over the active hosts, as a claim reads it. */
export const currentHost = (d: Pick<DestinationOverview, 'hosts' | 'hostIndex'>) =>
  d.hosts.length === 0 ? null : (d.hosts[d.hostIndex % d.hosts.length] ?? null);

/** A page of destinations and the name the next page starts after (null on the last page). */
export async function destinationPage(ports: Ports, page: Omit<DestinationPage, 'limit'>) {
  const rows = await ports.repos.monitor.destinations({ ...page, limit: DESTINATIONS_PER_PAGE + 1 });
  const more = rows.length > DESTINATIONS_PER_PAGE;
  const shown = rows.slice(0, DESTINATIONS_PER_PAGE);
  return { destinations: shown, next: more ? shown.at(-1)!.name : null };
}

/** The store's objects and bytes, superseded versions included, as `/metrics` counts them; null without a store. */
export async function storeSummary(ports: Ports) {
  if (!ports.store) return null;
  return { description: ports.store.description, ...(await ports.repos.retention.storeUsage()) };
}

/** One destination with its hosts, a page of its transfers and its last 24 hours of sending. */
export async function destinationDetail(ports: Ports, name: string, page: Omit<TransferPage, 'limit'>) {
  const [destination] = await ports.repos.monitor.destinations({ name, limit: 1 });
  if (!destination) throw notFound(`Destination ${name} not found`);
  const now = ports.clock();
  const since = new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS - 23 * HOUR_MS);
  const [hosts, rows, sent, acquisition] = await Promise.all([
    ports.repos.monitor.hostsOf(name),
    ports.repos.monitor.transfers(name, { ...page, limit: TRANSFERS_PER_PAGE + 1 }),
    ports.repos.monitor.sentPerHour(name, since),
    ports.repos.acquisition.runsOf(name),
  ]);
  const more = rows.length > TRANSFERS_PER_PAGE;
  const transfers = rows.slice(0, TRANSFERS_PER_PAGE);
  return {
    destination,
    hosts,
    acquisition,
    transfers,
    next: more ? transfers.at(-1)!.id : null,
    hours: hourly(sent, since),
  };
}

/** 24 hours from `since`, each hour present, empty ones at zero. */
export function hourly(rows: HourOfSending[], since: Date): HourOfSending[] {
  const byHour = new Map(rows.map((r) => [r.hour.getTime(), r]));
  return Array.from({ length: 24 }, (_, i) => {
    const hour = new Date(since.getTime() + i * HOUR_MS);
    return byHour.get(hour.getTime()) ?? { hour, bytes: 0, files: 0 };
  });
}

export type StepCell = ReturnType<typeof stepEntry>;

/**
 * The monitoring summary as a grid: a row per product and cycle (time), a column per step; a
 * cell holds the step's entries (one per type and buffer), each with its status level.
 */
export async function productGrid(ports: Ports, filter: { product?: string; time?: string }) {
  const now = ports.clock();
  const entries = (await ports.repos.monitoring.summary(filter)).map((s) => stepEntry(s, now));
  const steps = [...new Set(entries.map((e) => e.step))].sort((a, b) => a - b);
  const rows = new Map<string, { product: string; time: string; productTime: number | null; cells: StepCell[][] }>();
  for (const e of entries) {
    const key = JSON.stringify([e.product, e.time]);
    let row = rows.get(key);
    if (!row) {
      row = { product: e.product, time: e.time, productTime: e.productTime, cells: steps.map(() => []) };
      rows.set(key, row);
    }
    row.cells[steps.indexOf(e.step)]!.push(e);
  }
  const ordered = [...rows.values()].sort((a, b) => a.product.localeCompare(b.product) || a.time.localeCompare(b.time));
  return { steps, rows: ordered };
}

/** What each status level means (core/monitoring statusLevel), for the grid's legend. */
export const STATUS_LEVELS: Array<[number, string]> = [
  [1, 'Ahead of schedule by 30 minutes or more'],
  [2, 'Ahead by 15 to 30 minutes'],
  [3, 'On time (up to 15 minutes ahead)'],
  [4, 'Late'],
  [5, 'Over an hour late and not started'],
  [-1, 'No schedule'],
];

export async function stepHistory(ports: Ports, filter: { product: string; time: string; step: number; type: string }) {
  const now = ports.clock();
  return (await ports.repos.monitoring.history(filter)).map((s) => stepEntry(s, now));
}
