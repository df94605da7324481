import type { DestinationRetry, FailoverState } from './failover.ts';
import type { StartCounts, StartLimitDecision, StartLimits } from './start-limits.ts';
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
  /** The registered bytes' MD5 (hex) once known: from their retrieval, else from their first send. */
  md5: string | null;
  /** Their SHA-512 (base64), known once retrieved. */
  sha512: string | null;
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
  forChange(id: number): Promise<{
    status: string;
    destination: string;
    priority: number;
    expiresAt: Date;
    deleted: boolean;
  } | null>;
  /** Sets the priority of a transfer locked by forChange, with a history row in its current status. */
  setPriority(id: number, priority: number, at: Date, comment: string): Promise<void>;
  /**
   * Ends the running attempts of a destination (held or stopped): its transfers in EXEC become INTR,
   * with their history rows; each mover stops writing at its next heartbeat.
   */
  interruptDestination(destination: string, at: Date, why: string): Promise<void>;
  /**
   * Moves a transfer from `from` to `to` with its history row (after an INTR row when it was in EXEC:
   * its attempt is ended). 'changed meanwhile' when it is no
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

/** One attempt at a transfer: a transfer is claimed again only once its previous attempt has ended. */
export interface AttemptKey {
  id: number;
  attempt: number;
}

/** A transfer a mover was given: it may finish it only while it still owns this attempt. */
export interface ClaimedTransfer {
  id: number;
  attempt: number;
  dataFileId: number;
  destination: string;
  target: string;
  source: string;
  /** The key of the file's stored copy; null for a file read from its source at each send. */
  objectKey: string | null;
  /**
   * The stored copy's sums, as its retrieval computed them: a mover sends this MD5 rather than
   * hashing the bytes again, and holds the bytes it reads to this size. Null when not retrieved.
   */
  stored: StoredSums | null;
  size: number;
  priority: number;
  scheduledAt: Date;
  queueAt: Date;
  startedAt: Date;
}

/** What the retrieval of a data file measured while storing it. */
export interface StoredSums {
  /** Hex. */
  md5: string;
  size: number;
}

/** The compression filter a delivery applied: its name, and the size and MD5 of what it produced. */
export interface DeliveredFilter {
  name: string;
  size: number;
  md5: string;
}

/**
 * How an attempt ended. A failure writes history STOP (the error) then RETR (the requeue), as the
 * reference does; `requeueComment` says why it is requeued.
 */
export type AttemptOutcome =
  | { status: 'DONE'; sent: number; md5: string | null; comment: string; filter?: DeliveredFilter | null }
  | {
      status: 'RETR';
      sent: number;
      queueAt: Date;
      message: string;
      requeueComment: string;
    };

/** A delivered attempt's end, as finishDelivered writes it (see deliveredOutcome). */
export interface DeliveredEnd {
  id: number;
  attempt: number;
  mover: string;
  sent: number;
  md5: string | null;
  comment: string;
  filter: DeliveredFilter | null;
  success: { hostIndex: number; awayFromPrimary: boolean };
}

/** A dissemination host of a destination, as a mover needs it to send. */
export interface DisseminationHost {
  hostId: string;
  /** The transfer method's module (`sftp`, `ftp`, ...); null when the host has no method. */
  module: string | null;
  host: string;
  login: string;
  passwdSealed: string | null;
  dir: string;
  data: string;
  maxConnections: number | null;
  retryCount: number | null;
  retryFrequency: number | null;
  /** The network's label (`Internet`, ...), else its code. */
  network: string | null;
  /** The compression filter (`gzip`, ...), with the reference's optional size limits; null for none. */
  filterName?: string | null;
}

/** How many sessions a mover holds open to a host. */
export interface HostSessionCount {
  hostId: string;
  sessions: number;
}

/** A started destination with transfers due now, with what its scheduling is decided on. */
export interface DueDestination {
  name: string;
  typeLabel: string;
  maxConnections: number | null;
  retry: DestinationRetry;
  /** Active dissemination hosts, primary first. */
  hosts: DisseminationHost[];
  state: FailoverState;
}

/** Narrows the due destinations: to one of them, and to those with a due transfer whose source the mover reads. */
export interface DueFilter {
  destination?: string;
  /** A Worker's look: http(s) and R2 sources only. Otherwise a Node mover's: every source but R2 objects. */
  workerSourcesOnly?: boolean;
  /** Only destinations with an active dissemination host using one of these transfer methods. */
  modules?: readonly string[];
}

/**
 * What the movers are doing with a started destination, as a repository reads it in one query: the
 * display (`statusCode` of the destination endpoints) shows it for a destination stored WAIT or
 * EXEC, and what the operator stored (INIT, HOLD, STOP, FAIL) for any other.
 */
/** A started destination as its shown status is decided, with what that status is now. */
export interface ShownStatusView extends SchedulerView {
  shown: string | null;
  /** Changes with every write of the destination's row: a status decided from this view is stored only while it holds. */
  version: string;
  /** The destination requeued a transfer at its start limit since its last success (see rescheduleAfterRequeue). */
  requeued: boolean;
}

export interface SchedulerView {
  /** A transfer of the destination is being sent now. */
  sending: boolean;
  /** The transfer being sent failed before: its last attempt ended in an error (the reference's "Resending"). */
  resending: boolean;
  /** A transfer's queue time has come (WAIT, RETR or INTR). */
  due: boolean;
  /** The ring's pause after a failure: waiting out a host's retry frequency, or sleeping after a round. */
  pausedUntil: Date | null;
  pauseReason: 'retry' | 'sleep' | null;
}

/** The stored state of a destination's ring, as the mover that ends an attempt reads and writes it. */
export interface StoredFailover {
  state: FailoverState;
  pausedUntil: Date | null;
  pauseReason: 'retry' | 'sleep' | null;
}

/** One destination's figures for the alerts of /metrics. */
export interface DestinationFigures {
  destination: string;
  /** The status the endpoints show (HOLD, STOP, INIT, or the scheduler's while started). */
  status: string;
  /** Transfers waiting to be sent (WAIT, RETR, INTR): what its maxPending counts. */
  waiting: number;
  /** The earliest scheduled time of a waiting transfer whose time has come; null when none has. */
  oldestWaitingSince: Date | null;
  /** Transfers with a failed attempt (an error in their history) in the hour before `now`. */
  failedLastHour: number;
  /** Its maxPending as puts apply it (unset: the default); null when it has none (0 or less). */
  maxPending: number | null;
  /** Its maxInactivity (ms): how long work may wait on it; null when it sets none (unset, 0 or less). */
  maxInactivityMs: number | null;
}

/** What the alerts read at each scrape, in one statement (see db/repositories/ops-figures.ts). */
export interface OpsFigures {
  destinations: DestinationFigures[];
  /** The WIS2 outbox's rows not yet done, and the earliest time one of them became due. */
  wis2Outbox: { pending: number; oldestDueAt: Date | null };
  /** Each mover not stopped on purpose that beat within a week: its heartbeat's age and how often it beats. */
  movers: Array<{ mover: string; heartbeatAgeSeconds: number; heartbeatSeconds: number }>;
}

export interface DisseminationRepo {
  /** The mover's heartbeat, at the database's time; `intervalMs` is how often it beats. */
  moverBeat(mover: string, intervalMs: number): Promise<void>;
  /** The mover stopped on purpose: its heartbeat is no longer expected. */
  moverStopped(mover: string): Promise<void>;
  /** Live transfers (WAIT, RETR, INTR, EXEC, HOLD) counted per destination and status. */
  queueDepth(): Promise<Array<{ destination: string; status: string; count: number }>>;
  /** The figures /metrics gives for the alerts, read at `now`. */
  opsFigures(now: Date): Promise<OpsFigures>;
  /**
   * Active destinations whose stored status is WAIT or EXEC, not paused, below their own
   * maxConnections, with a transfer due now; those waiting longest first.
   */
  dueDestinations(now: Date, limit: number, filter?: DueFilter): Promise<DueDestination[]>;
  /**
   * Raises the due times of these destinations to their earliest waiting transfer (takes out those
   * with none), skipping any a put is registering a transfer for at this moment: their time stays
   * as it is, never later than their transfers.
   */
  settleDueQueue(destinations: string[], now: Date): Promise<void>;
  /** Destinations whose due time has passed with no transfer due: the queue's entries to settle. */
  staleInDueQueue(now: Date, limit: number): Promise<string[]>;
  /** The destination's ring, locked until the end of the transaction (created when missing). */
  lockFailover(destination: string): Promise<StoredFailover>;
  /**
   * Delivered attempts ended in one statement: each still the mover's (EXEC, same mover and
   * attempt) goes DONE with its history row and its data file's checksum; each an operator changed
   * meanwhile is only released; and the ring of every destination with an end is told its host
   * works, with no read before the write, as the ends in their order would have left it (the last
   * host used; the time it left the primary kept only while every one was away from it). It waits
   * for an ending failure's lock like any writer, so the two apply in some order, each whole.
   * Answers the attempts ended.
   */
  finishDelivered(input: { now: Date; ends: readonly DeliveredEnd[] }): Promise<AttemptKey[]>;
  saveFailover(
    destination: string,
    failover: StoredFailover,
    result: { at: Date; hostId: string; error: string | null },
  ): Promise<void>;
  /** Puts a destination whose every host failed its rounds on HOLD, for an operator to restart. */
  holdDestination(destination: string): Promise<void>;
  /** A started destination without dissemination hosts cannot send (the reference's NoHosts). */
  failDestination(destination: string): Promise<void>;
  /**
   * What the movers are doing with each started destination (stored WAIT or EXEC) among `names`, and
   * the status shown for it now; destinations not started are missing.
   */
  schedulerViews(names: readonly string[], now: Date): Promise<Map<string, ShownStatusView>>;
  /**
   * Stores the status shown for a started destination (see refreshShownStatuses); with `version`,
   * only while its row is still the one read then. Answers whether it was written.
   */
  showSchedulerStatus(destination: string, status: string, version?: string): Promise<boolean>;
  /**
   * Locks the destination's row for the rest of the transaction and answers its start limits; null
   * when another claimer holds it (it will hand out the transfers, so this one moves on). Once it
   * has the row, it locks the host too, waiting for other claims on it: the host's limit holds across
   * every destination that uses it.
   */
  lockForClaim(destination: string, hostId: string): Promise<StartLimits | null>;
  /** Writes a start-limit decision on a transfer locked by `running`, with its history row. */
  applyStartLimit(id: number, decision: StartLimitDecision, now: Date): Promise<void>;
  /** Remembers that the destination requeued a transfer at its start limit. */
  markRequeued(destination: string, now: Date): Promise<void>;
  /** Forgets that these destinations requeued a transfer at their start limit; answers those that had. */
  takeRequeued(names: readonly string[]): Promise<string[]>;
  /**
   * The destination's WAIT and RETR transfers (not deleted) that started or were requeued before are
   * due at their scheduled time again; answers how many.
   */
  resetToScheduled(destination: string, now: Date): Promise<number>;
  /**
   * What a claim of `mover` counts against the limits: the attempts that may still be writing (a
   * mover holds them, whatever their status now) of the destination; and to the host from any
   * destination, each other mover counted for the more of its attempts and the sessions it
   * published (busy or idle, under a lease not lapsed at `now`), `mover` for its attempts alone
   * (it reuses its own idle sessions, and opens a new one only when all of them are busy). In the
   * same statement, with `atStartLimit`: up to `limit` due transfers of the destination (as takeDue
   * reads them) started `startLimit` times or more, locked until the end of the transaction, in the
   * order they would be sent.
   */
  running(
    destination: string,
    hostId: string,
    mover: string,
    now: Date,
    atStartLimit?: { startLimit: number; limit: number },
  ): Promise<{ destination: number; host: number; atStartLimit: Array<StartCounts & { id: number }> }>;
  /**
   * Writes the sessions `mover` holds open per host (those missing hold none) under a lease until
   * `leaseUntil`, in one statement.
   */
  publishSessions(input: { mover: string; held: readonly HostSessionCount[]; leaseUntil: Date }): Promise<void>;
  /**
   * Moves up to `limit` due transfers of the destination (WAIT, RETR or INTR, queue time reached,
   * not expired) to EXEC for the mover, in priority, queue time and id order, with their history rows.
   */
  takeDue(input: {
    destination: string;
    hostId: string;
    mover: string;
    limit: number;
    now: Date;
    leaseUntil: Date;
    /**
     * Only transfers whose source a Worker reads: an http(s) URL or an R2 object (it has no file
     * system). Otherwise a Node mover's claim: every source but R2 objects, left to Workers.
     */
    workerSourcesOnly?: boolean;
    /** Only transfers started fewer times than this (those at their start limit are requeued first). */
    startBelow?: number;
  }): Promise<ClaimedTransfer[]>;
  /**
   * Ends an attempt with its history row, only while the mover still owns it (EXEC, same mover and
   * attempt); false, and nothing written, otherwise.
   */
  finish(input: { id: number; mover: string; attempt: number; now: Date; outcome: AttemptOutcome }): Promise<boolean>;
  /** Extends the lease of the mover's attempts still in EXEC; answers those (one missing was taken away). */
  renewLeases(input: { mover: string; leaseUntil: Date; attempts: readonly AttemptKey[] }): Promise<AttemptKey[]>;
  /**
   * Transfers whose lease ran out (their mover died or hung) go back to RETR, due at once, with
   * history INTR then RETR; answers how many.
   */
  reclaimLapsed(now: Date): Promise<number>;
}
