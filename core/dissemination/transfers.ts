import { notFound } from '../common/errors.ts';
import type { Ports } from '../ports.ts';
import type { TransferFilter } from './ports.ts';

/** What `transfer list` shows at most, newest first. */
export const TRANSFER_LIST_LIMIT = 1000;

export function listTransfers(ports: Ports, filter: Omit<TransferFilter, 'limit'>) {
  return ports.repos.transfers.list({ ...filter, limit: TRANSFER_LIST_LIMIT });
}

/** One transfer with its history, oldest change first. */
export async function showTransfer(ports: Ports, id: number) {
  const transfer = await ports.repos.transfers.get(id);
  if (!transfer) throw notFound(`Transfer ${id} not found`);
  return { ...transfer, history: await ports.repos.transfers.history(id) };
}
