/** A data transfer as the operator's commands show it. */
export interface TransferView {
  id: number;
  dataFileId: number;
  destination: string;
  target: string;
  uniqueName: string;
  status: string;
  priority: number;
  scheduledAt: Date;
  expiresAt: Date;
  message: string | null;
  source: string;
  size: number;
  updatedAt: Date;
}

export interface TransferHistoryEntry {
  at: Date;
  status: string;
  hostId: string | null;
  sent: number;
  comment: string | null;
  error: boolean;
}

export interface TransferFilter {
  destination?: string;
  status?: string;
  /** At most this many, newest first. */
  limit: number;
}

export interface TransferRepo {
  list(filter: TransferFilter): Promise<TransferView[]>;
  get(id: number): Promise<TransferView | null>;
  /** Oldest first. */
  history(id: number): Promise<TransferHistoryEntry[]>;
  /** The transfer, locked until the end of the transaction, with what a manual change is judged on. */
  forChange(id: number): Promise<{ status: string; destination: string; expiresAt: Date; deleted: boolean } | null>;
  /**
   * Moves a transfer from `from` to `to` with its history row. 'changed meanwhile' when it is no
   * longer in `from`; 'key taken' when another live transfer holds its key.
   */
  changeStatus(
    id: number,
    from: string,
    to: string,
    at: Date,
    comment: string,
  ): Promise<'changed' | 'changed meanwhile' | 'key taken'>;
}
