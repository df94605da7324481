import type { RetrievalClaim } from '../retrieval/ports.ts';
import type { ReceivedMessage } from '../wis2/ports.ts';
import type { PlannedTransfer, PutDestination } from './put-plan.ts';
import type { RequeueFile } from './requeue-on.ts';

export interface SourceProber {
  probe(source: string): Promise<{ size: number }>;
}

export interface NewTransfer {
  destination: string;
  target: string;
  uniqueName: string;
  priority: number;
  /** DONE only for an acquiring destination that sends nowhere: its transfer ends once its file is retrieved. */
  status: 'WAIT' | 'HOLD' | 'DONE';
  standby: boolean;
  scheduledAt: Date;
  /** When it may first be sent: its scheduled time, or the put's time with asap. */
  queueAt?: Date;
  expiresAt: Date;
  metadata: Array<[string, string]>;
}

export interface RegisteredFile {
  source: string;
  size: number;
  registeredBy: string;
  /** The transfer's first history comment (`Registered by <registeredBy>`, `Via Data Portal`). */
  comment: string;
  /** Its transfers wait in SCHE until it is retrieved into the store, then take their planned status. */
  retrieve: boolean;
  /** The Acquisition host it was listed on, where its source is read; none for a put. */
  acquiredFrom?: AcquiredFrom;
}

/** Where an acquired file was listed, and its modification time there (null when the listing gave none). */
export interface AcquiredFrom {
  hostId: number;
  time: Date | null;
  /** The WIS2 message that announced it, when a subscription received it. */
  notice?: ReceivedMessage;
}

/** The retriever of this process a put claims its file for (see LocalRetrievers). */
export interface FetchBy {
  mover: string;
  leaseMs: number;
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

/** Which waiting transfers of one destination and target go to HOLD, with their history comment. */
export type DuplicateHolds = (
  destination: string,
  target: string,
  transfers: RequeueFile[],
) => Array<{ transferId: number; comment: string }>;

export type RegisterAllOutcome = { id: number; replaced: boolean } | { taken: number } | 'taken';

export interface DataFileRepo {
  /**
   * The destination and every destination reachable from it through aliases (whatever their
   * rules), with their options, limits and waiting transfers; null when it does not exist.
   */
  putReach(destination: string): Promise<Map<string, PutDestination> | null>;
  /**
   * Registers one file and its transfers (a put over an alias closure) in one transaction. A live
   * transfer holding one of the keys gives `{ taken }` (its file), unless `force`: then the live ones
   * are requeued with the file and the missing ones added to it. `holds` picks the waiting
   * transfers of a target that a newer one displaces (requeueon); 'taken' when a concurrent put won.
   */
  registerAll(
    file: RegisteredFile,
    transfers: PlannedTransfer[],
    options: { force: boolean; forcedComment: string; holds: DuplicateHolds },
  ): Promise<RegisterAllOutcome>;
  /**
   * Inserts file and transfer and gives the file's id; 'taken' when a live transfer already
   * holds the unique key, 'no destination' when the destination does not exist.
   */
  register(file: RegisteredFile, transfer: NewTransfer): Promise<number | 'taken' | 'no destination'>;
  /**
   * As register, the file claimed in the same statement for the retriever `fetchBy` (its transfer in
   * FETC, with the history and the lease a claim writes): the claim to retrieve it by.
   */
  registerFetched(
    file: RegisteredFile,
    transfer: NewTransfer,
    fetchBy: FetchBy,
  ): Promise<RetrievalClaim | 'taken' | 'no destination'>;
  /** The live transfer holding the key, if any. */
  findLive(
    destination: string,
    target: string,
    uniqueName: string,
  ): Promise<{ transferId: number; dataFileId: number } | null>;
  /**
   * Gives the live transfer the new source and schedule (a forced put), with `comment` in its history;
   * `registeredBy`, when given, becomes its data file's (who put the bytes now under it).
   */
  requeue(
    transferId: number,
    file: Pick<RegisteredFile, 'source' | 'size' | 'comment' | 'retrieve' | 'acquiredFrom'> &
      Partial<Pick<RegisteredFile, 'registeredBy'>>,
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
