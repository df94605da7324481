import type { EngineStats } from '../../core/dissemination/stats.ts';

/**
 * Request counters of one app, rendered in the Prometheus text format. createApp makes one;
 * nothing is kept at module level, so each app (and each test) starts from zero.
 */
export interface Metrics {
  /** Marks a request as started; the returned function records it once answered. */
  begin(): (service: string, status: number, seconds: number) => void;
  render(): string;
}

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Histogram {
  counts: number[];
  sum: number;
  count: number;
}

const label = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const number = (n: number) => (Number.isInteger(n) ? String(n) : n.toPrecision(6).replace(/\.?0+$/, ''));

export function createMetrics(): Metrics {
  const requests = new Map<string, Map<number, number>>();
  const durations = new Map<string, Histogram>();
  let inFlight = 0;

  function record(service: string, status: number, seconds: number) {
    const byStatus = requests.get(service) ?? new Map<number, number>();
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    requests.set(service, byStatus);
    const h = durations.get(service) ?? { counts: BUCKETS.map(() => 0), sum: 0, count: 0 };
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) h.counts[i]!++;
    h.sum += seconds;
    h.count++;
    durations.set(service, h);
  }

  return {
    begin() {
      inFlight++;
      let done = false;
      return (service, status, seconds) => {
        if (done) return;
        done = true;
        inFlight--;
        record(service, status, seconds);
      };
    },
    render() {
      const lines: string[] = [];
      const services = [...requests.keys()].sort();
      lines.push(
        '# HELP ecpds_http_requests_total Requests answered, ' +
          'by service (permission name, or none/basic) and HTTP status.',
      );
      lines.push('# TYPE ecpds_http_requests_total counter');
      for (const service of services) {
        for (const [status, n] of [...requests.get(service)!].sort(([a], [b]) => a - b)) {
          lines.push(`ecpds_http_requests_total{service="${label(service)}",status="${status}"} ${n}`);
        }
      }
      lines.push('# HELP ecpds_http_request_duration_seconds Time to answer a request, by service.');
      lines.push('# TYPE ecpds_http_request_duration_seconds histogram');
      for (const service of services) {
        const h = durations.get(service)!;
        const s = `service="${label(service)}"`;
        for (const [i, le] of BUCKETS.entries()) {
          lines.push(`ecpds_http_request_duration_seconds_bucket{${s},le="${le}"} ${h.counts[i]}`);
        }
        lines.push(`ecpds_http_request_duration_seconds_bucket{${s},le="+Inf"} ${h.count}`);
        lines.push(`ecpds_http_request_duration_seconds_sum{${s}} ${number(h.sum)}`);
        lines.push(`ecpds_http_request_duration_seconds_count{${s}} ${h.count}`);
      }
      lines.push('# HELP ecpds_http_requests_in_flight Requests being answered.');
      lines.push('# TYPE ecpds_http_requests_in_flight gauge');
      lines.push(`ecpds_http_requests_in_flight ${inFlight}`);
      return `${lines.join('\n')}\n`;
    },
  };
}

/** The service label of a request that no catalogue route labelled. */
export const otherLabel = (path: string) =>
  path === '/console' || path.startsWith('/console/')
    ? 'console'
    : path === '/portal' || path.startsWith('/portal/')
      ? 'portal'
      : 'other';

/**
 * The engine's part of /metrics: live transfers per destination and status (from the database,
 * so every mover's work counts), and what this process's mover did, when it runs one.
 */
export function renderEngine(
  depth: Array<{ destination: string; status: string; count: number }>,
  stats: ReturnType<EngineStats['snapshot']> | null,
): string {
  const lines = [
    '# HELP ecpds_transfers Transfers not yet ended (WAIT, RETR, INTR, EXEC, HOLD), by destination and status.',
    '# TYPE ecpds_transfers gauge',
    ...depth.map((d) => `ecpds_transfers{destination="${label(d.destination)}",status="${d.status}"} ${d.count}`),
    '# HELP ecpds_transfers_running Transfers being sent now (EXEC), over every destination.',
    '# TYPE ecpds_transfers_running gauge',
    `ecpds_transfers_running ${depth.filter((d) => d.status === 'EXEC').reduce((n, d) => n + d.count, 0)}`,
  ];
  if (stats) {
    const perHost = (name: string, help: string, values: ReadonlyMap<string, number>) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
      for (const [host, n] of [...values].sort(([a], [b]) => a.localeCompare(b))) {
        lines.push(`${name}{host="${label(host)}"} ${n}`);
      }
    };
    perHost('ecpds_mover_bytes_sent_total', "Bytes delivered by this process's mover, by host id.", stats.bytesSent);
    perHost('ecpds_mover_delivered_total', "Files delivered by this process's mover, by host id.", stats.delivered);
    perHost('ecpds_mover_failures_total', "Failed attempts of this process's mover, by host id.", stats.failures);
    lines.push(
      "# HELP ecpds_mover_lease_reclaims_total Transfers of lost movers given back by this process's mover.",
      '# TYPE ecpds_mover_lease_reclaims_total counter',
      `ecpds_mover_lease_reclaims_total ${stats.reclaims}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
