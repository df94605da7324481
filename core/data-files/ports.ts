export interface SourceProber {
  probe(source: string): Promise<{ size: number }>;
}

export interface NewTransfer {
  destination: string;
  target: string;
  uniqueName: string;
  priority: number;
  status: 'WAIT' | 'HOLD';
  standby: boolean;
  scheduledAt: Date;
  expiresAt: Date;
  metadata: Array<[string, string]>;
}

export interface RegisteredFile {
  source: string;
  size: number;
  registeredBy: string;
  /** The transfer's first history comment (`Registered by <registeredBy>`, `Via Data Portal`). */
  comment: string;
}

export interface ExpiredTransfer {
  transferId: number;
  destination: string;
  /** The label of the destination's type (`Dissemination`, `Time Critical`, …). */
  destinationType: string;
  target: string;
  size: number;
  scheduledAt: Date;
  /** The label of the first host's network (its name, else its code), as ERR lines carry it. */
  network: string | null;
}

export interface DataFileRepo {
  /**
   * Inserts file and transfer and gives the file's id; 'taken' when a live transfer already
   * holds the unique key, 'no destination' when the destination does not exist.
   */
  register(file: RegisteredFile, transfer: NewTransfer): Promise<number | 'taken' | 'no destination'>;
  /** The live transfer holding the key, if any. */
  findLive(
    destination: string,
    target: string,
    uniqueName: string,
  ): Promise<{ transferId: number; dataFileId: number } | null>;
  /** Gives the live transfer the new source and schedule (a forced put), with `comment` in its history. */
  requeue(
    transferId: number,
    file: { source: string; size: number; comment: string },
    transfer: NewTransfer,
  ): Promise<void>;
  find(id: number): Promise<{ id: number; size: number; deletedAt: Date | null } | null>;
  /** Marks the file deleted and its transfers STOP; answers how many WIS2 notices it wrote. */
  markDeleted(id: number, at: Date): Promise<number>;
  /**
   * Writes a WIS2 deletion notice for each transfer announced as new or updated that expired since
   * (it left the portal), once; answers how many.
   */
  noticeExpired(now: Date): Promise<number>;
  /** Fails every transfer not done before its expiry; returns what it failed. */
  expire(now: Date, message: string): Promise<ExpiredTransfer[]>;
}
