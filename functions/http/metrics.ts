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
export const otherLabel = (path: string) => (path === '/console' || path.startsWith('/console/') ? 'console' : 'other');
