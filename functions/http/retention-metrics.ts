import type { PurgeTotals } from '../../core/retention/ports.ts';

/** The purge's part of /metrics: what every sweeping process has deleted, from the database. */
export function renderRetention(totals: PurgeTotals): string {
  const counter = (name: string, help: string, value: number) => [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} counter`,
    `${name} ${value}`,
  ];
  return `${[
    ...counter(
      'ecpds_purged_transfers_total',
      'Ended transfers deleted past the retention limits (age, transfers per identity).',
      totals.transfers,
    ),
    ...counter('ecpds_purged_history_rows_total', 'History rows deleted with the purged transfers.', totals.history),
    ...counter(
      'ecpds_purged_data_files_total',
      'Data files deleted once none of their transfers was left.',
      totals.dataFiles,
    ),
  ].join('\n')}\n`;
}

/** The store's part of /metrics: the objects the database records (superseded ones until they go) and their bytes. */
export function renderStore(usage: { objects: number; bytes: number }): string {
  const gauge = (name: string, help: string, value: number) => [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} gauge`,
    `${name} ${value}`,
  ];
  return `${[
    ...gauge(
      'ecpds_store_objects',
      'Objects in the store: retrieved copies of data files, superseded ones kept.',
      usage.objects,
    ),
    ...gauge('ecpds_store_bytes', 'Bytes of the objects in the store.', usage.bytes),
  ].join('\n')}\n`;
}
