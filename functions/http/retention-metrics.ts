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
