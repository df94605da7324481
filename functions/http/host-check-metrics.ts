import type { HostCheckSeries } from '../../core/host-checks/ports.ts';

const label = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/**
 * Host checks' part of /metrics, from the database (whichever server ran them): the latest check of each
 * checked host, one series per destination it serves, so that an alert names the destination it affects.
 */
export function renderHostChecks(series: HostCheckSeries[]): string {
  const gauge = (name: string, help: string, value: (s: HostCheckSeries) => number) => [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} gauge`,
    ...series.map((s) => `${name}{host="${s.hostId}",destination="${label(s.destination)}"} ${value(s)}`),
  ];
  return `${[
    ...gauge('ecpds_host_check_up', "1 when the host's latest check worked, 0 when it failed.", (s) => Number(s.ok)),
    ...gauge('ecpds_host_check_timestamp_seconds', "When the host's latest check began (unix time).", (s) =>
      Math.floor(s.at.getTime() / 1000),
    ),
    ...gauge('ecpds_host_check_duration_seconds', "How long the host's latest check took.", (s) => s.durationMs / 1000),
  ].join('\n')}\n`;
}
