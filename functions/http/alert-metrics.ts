import type { OpsFigures } from '../../core/dissemination/ports.ts';

const label = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const seconds = (from: Date | null, now: Date) =>
  from === null ? 0 : Math.max(0, Math.round((now.getTime() - from.getTime()) / 1000));

type Sample = [Record<string, string>, number];

function gauge(name: string, help: string, samples: Sample[]) {
  const labels = (l: Record<string, string>) => {
    const text = Object.entries(l)
      .map(([k, v]) => `${k}="${label(v)}"`)
      .join(',');
    return text ? `{${text}}` : '';
  };
  return [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, ...samples.map(([l, v]) => `${name}${labels(l)} ${v}`)];
}

/**
 * What docs/ops/prometheus-alerts.yml reads: per destination its backlog, its oldest waiting file's age,
 * its failures of the hour and its status; the WIS2 outbox's backlog; each mover's heartbeat. Ages are
 * computed here, at the database's time, so that a scraper's clock does not enter them.
 */
export function renderAlertFigures(figures: OpsFigures, now: Date): string {
  const perDestination = (value: (d: OpsFigures['destinations'][number]) => number | null) =>
    figures.destinations.flatMap((d): Sample[] => {
      const v = value(d);
      return v === null ? [] : [[{ destination: d.destination }, v]];
    });
  return `${[
    ...gauge(
      'ecpds_destination_waiting_files',
      'Transfers waiting to be sent (WAIT, RETR, INTR), by destination.',
      perDestination((d) => d.waiting),
    ),
    ...gauge(
      'ecpds_destination_oldest_waiting_seconds',
      'Age of the oldest waiting transfer whose scheduled time has come (0: none), by destination.',
      perDestination((d) => seconds(d.oldestWaitingSince, now)),
    ),
    ...gauge(
      'ecpds_destination_failed_last_hour',
      'Transfers with a failed attempt in the last hour, by destination.',
      perDestination((d) => d.failedLastHour),
    ),
    ...gauge(
      'ecpds_destination_max_pending',
      'The waiting transfers above which puts are refused (maxPending), by destination; absent: no limit.',
      perDestination((d) => d.maxPending),
    ),
    ...gauge(
      'ecpds_destination_max_waiting_seconds',
      'How long work may wait on the destination (its maxInactivity), by destination; absent: none set.',
      perDestination((d) => (d.maxInactivityMs === null ? null : d.maxInactivityMs / 1000)),
    ),
    ...gauge(
      'ecpds_destination_status',
      'The status the API shows (HOLD, STOP, INIT, WAIT, EXEC, RETR, IDLE, SCHE, ...): 1 for the current one.',
      figures.destinations.map((d): Sample => [{ destination: d.destination, status: d.status }, 1]),
    ),
    ...gauge('ecpds_wis2_outbox_pending', 'WIS2 notifications not yet published or dropped.', [
      [{}, figures.wis2Outbox.pending],
    ]),
    ...gauge(
      'ecpds_wis2_outbox_oldest_seconds',
      'How long the oldest due WIS2 notification has waited to be published (0: none).',
      [[{}, seconds(figures.wis2Outbox.oldestDueAt, now)]],
    ),
    ...gauge(
      'ecpds_mover_heartbeat_age_seconds',
      "Time since each mover's last heartbeat, at the database's time; movers stopped on purpose, or silent " +
        'for over a week, are not shown.',
      figures.movers.map((m): Sample => [{ mover: m.mover }, m.heartbeatAgeSeconds]),
    ),
    ...gauge(
      'ecpds_mover_heartbeat_interval_seconds',
      'How often each mover beats (ECPDS_MOVER_HEARTBEAT_SECONDS).',
      figures.movers.map((m): Sample => [{ mover: m.mover }, m.heartbeatSeconds]),
    ),
  ].join('\n')}\n`;
}

/** Whether the database answered the scrape's statements and the store its probe (absent without a store). */
export function renderReachability(databaseUp: boolean, storeUp: boolean | null): string {
  return `${[
    ...gauge('ecpds_database_up', '1 when the database answered this scrape, 0 when it did not.', [
      [{}, Number(databaseUp)],
    ]),
    ...(storeUp === null
      ? []
      : gauge('ecpds_store_up', '1 when the store writes, reads back and deletes a small object (as /healthz).', [
          [{}, Number(storeUp)],
        ])),
  ].join('\n')}\n`;
}
