import type { AcquisitionTotals, CacheTotal } from '../../core/acquisition/ports.ts';

const label = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/** One metric family: its HELP and TYPE lines, then a line per sample, labels escaped. */
function family(
  name: string,
  type: 'counter' | 'gauge',
  help: string,
  samples: Array<[Record<string, string>, number]>,
) {
  const labels = (l: Record<string, string>) =>
    Object.entries(l)
      .map(([k, v]) => `${k}="${label(v)}"`)
      .join(',');
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples.map(([l, v]) => `${name}{${labels(l)}} ${v}`)];
}

/**
 * Acquisition's part of /metrics, from the database (every mover's runs count): runs by host and outcome,
 * listed entries by how they ended, and a subscription's WIS2 messages by how they ended.
 */
export function renderAcquisition(totals: AcquisitionTotals[]): string {
  const counters = (name: string, help: string, of: (t: AcquisitionTotals) => Record<string, number> | null) =>
    family(
      name,
      'counter',
      help,
      totals.flatMap((t) =>
        Object.entries(of(t) ?? {})
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([outcome, n]): [Record<string, string>, number] => [{ host: String(t.hostId), outcome }, n]),
      ),
    );
  return `${[
    ...counters(
      'ecpds_acquisition_runs_total',
      'Runs of each Acquisition host: done, failed (not reachable, a line unreadable) or cut ' +
        '(maximumDuration, a stop).',
      (t) => t.runs,
    ),
    ...counters('ecpds_acquisition_entries_total', 'Entries listed on each Acquisition host, selected or not.', (t) =>
      t.subscribes ? null : t.entries,
    ),
    ...counters(
      'ecpds_wis2_messages_total',
      'WIS2 messages of each subscription: taken, invalid, duplicate, recommended, unverified (length or ' +
        'digest) or undownloaded.',
      (t) => (t.subscribes ? t.entries : null),
    ),
  ].join('\n')}\n`;
}

/**
 * A Global Cache's metrics as the WMO names them (wis2-metric-hierarchy, gc.csv), labelled with the data's
 * centre (`centre_id`) and the cache's own (`report_by`); downloaded bytes besides.
 */
export function renderGlobalCache(totals: CacheTotal[]): string {
  const series = (name: string, type: 'counter' | 'gauge', help: string, value: (t: CacheTotal) => number | null) =>
    family(
      name,
      type,
      help,
      totals.flatMap((t): Array<[Record<string, string>, number]> => {
        const v = value(t);
        return v === null ? [] : [[{ centre_id: t.centre, report_by: t.reportBy }, v]];
      }),
    );
  return `${[
    ...series(
      'wmo_wis2_gc_downloaded_total',
      'counter',
      'Data items downloaded to the Global Cache (not those taken from inline content).',
      (t) => t.downloaded,
    ),
    ...series(
      'wmo_wis2_gc_downloaded_bytes_total',
      'counter',
      'Bytes of the data items the Global Cache kept, downloaded or inline.',
      (t) => t.bytes,
    ),
    ...series('wmo_wis2_gc_downloaded_errors_total', 'counter', 'Downloads that failed.', (t) => t.errors),
    ...series(
      'wmo_wis2_gc_integrity_failed_total',
      'counter',
      'Messages whose data did not match their integrity digest or length.',
      (t) => t.integrityFailed,
    ),
    ...series(
      'wmo_wis2_gc_no_cache_total',
      'counter',
      'Messages republished without their data (cache: false).',
      (t) => t.noCache,
    ),
    ...series(
      'wmo_wis2_gc_last_download_timestamp_seconds',
      'gauge',
      'When the last download from the centre succeeded.',
      (t) => (t.lastDownloadAt === null ? null : Math.floor(t.lastDownloadAt.getTime() / 1000)),
    ),
    ...series(
      'wmo_wis2_gc_dataserver_status_flag',
      'gauge',
      "1 when the last download from the centre's data server worked, 0 when it failed.",
      (t) => (t.serverUp === null ? null : Number(t.serverUp)),
    ),
  ].join('\n')}\n`;
}
