import type { SourceHost } from '../retrieval/ports.ts';
import type { NotificationKind } from '../wis2/message.ts';
import type { ReceivedMessage } from '../wis2/ports.ts';

/** An Acquisition host a mover holds for one run, with the started destinations it acquires for. */
export interface AcquisitionClaim {
  host: SourceHost & { nickname: string; transferMethod: string | null };
  destinations: AcquiringDestination[];
  /** `acquisitionFrequency`: from the end of this run to the next; null when the host sets none. */
  frequencyMs: number | null;
}

/** A destination a run acquires for; one that `sendsNowhere` has no active Dissemination host. */
export interface AcquiringDestination {
  name: string;
  sendsNowhere: boolean;
  /** Its options text: a Global Cache (`wis2.globalCache`) republishes the WIS2 messages it takes. */
  data: string;
}

/** How a run ended: listed to its end, the host unreachable or a line unreadable, or cut at maximumDuration. */
export type RunOutcome = 'done' | 'failed' | 'cut';

/** What a run leaves: its outcome and output, shown by `host output` and the console. */
export interface RunRecord {
  outcome: RunOutcome;
  output: string;
  /** Its entries by how they ended (see RunOutput.counts). */
  counts: Record<string, number>;
  /** A Global Cache's counts of the messages it took, by cache and centre (the WMO's `wmo_wis2_gc_*`). */
  cache?: CacheTotal[];
}

/** A Global Cache's counts for one centre's data over a run. */
export interface CacheTotal {
  reportBy: string;
  centre: string;
  downloaded: number;
  bytes: number;
  errors: number;
  integrityFailed: number;
  noCache: number;
  lastDownloadAt: Date | null;
  /** Whether the centre's last download worked; null when none was tried. */
  serverUp: boolean | null;
}

/** What a Global Cache did with one message's data from a centre. */
export interface CacheCount {
  /** The cache's centre id. */
  reportBy: string;
  /** The centre whose topic the message came on. */
  centre: string;
  outcome: 'downloaded' | 'inline' | 'error' | 'integrity_failed' | 'no_cache';
  bytes: number;
  at: Date;
}

/** The last run of a host, as shown. */
export interface RunShown extends Omit<RunRecord, 'counts'> {
  hostId: number;
  startedAt: Date | null;
  finishedAt: Date | null;
  nextAt: Date | null;
  /** The mover running it now, if one is. */
  runningOn: string | null;
}

export interface AcquisitionTotals {
  hostId: number;
  /** Whether the host subscribes (WIS2) rather than lists: its entries are messages. */
  subscribes: boolean;
  runs: Record<string, number>;
  entries: Record<string, number>;
}

export interface AcquisitionHostRuns {
  hostId: number;
  nickname: string | null;
  host: string | null;
  active: boolean;
  run: RunShown | null;
}

/**
 * The transfer of a destination holding an acquired file's key: its live one (neither failed nor stopped), else
 * its last one stopped whose file was not deleted (the reference keeps such a file acquired).
 */
export interface AcquiredBefore {
  dataFileId: number;
  transferId: number;
  status: string;
  size: number;
  /** The listed time it was acquired with; null when unknown. */
  time: Date | null;
}

export interface AcquisitionRepo {
  /**
   * Takes up to `limit` due hosts (type Acquisition, active, with a started destination, their previous run
   * ended `acquisitionFrequency` ago), fewer when `most` runs are under way over all movers: each held by
   * this mover until `leaseMs` from now.
   */
  claim(mover: string, leaseMs: number, limit: number, most: number): Promise<AcquisitionClaim[]>;
  /** Extends the lease of a run this mover still holds; false when it no longer does. */
  renew(mover: string, hostId: number, leaseMs: number): Promise<boolean>;
  /** Records a run's end and when the next is due, if the mover still holds it; false when not. */
  finish(mover: string, hostId: number, record: RunRecord, nextInMs: number): Promise<boolean>;
  /** For each key given (by keyOf), the destination's transfer holding it (see AcquiredBefore). */
  acquiredBefore(
    destination: string,
    keys: Array<{ target: string; uniqueName: string }>,
  ): Promise<Map<string, AcquiredBefore>>;
  /**
   * Remembers a WIS2 message's id for a destination, as being taken: false when it had it before (through this
   * broker or another), unless `retake` and its take never ended (a redelivery after its process died).
   */
  firstSeen(destination: string, messageId: string, retake: boolean): Promise<boolean>;
  /** Marks a message's take ended, for each of `destinations`. */
  tookMessage(destinations: string[], messageId: string): Promise<void>;
  /**
   * Queues a Global Cache's republication of `origin` for `destination` (no data file: a message whose data
   * it does not keep; a data file: its deletion), unless the same data (`data_id` and `pubtime`) was queued for
   * it before, in one statement; answers whether it was queued.
   */
  republish(
    destination: string,
    origin: ReceivedMessage,
    dataKey: string,
    kind: NotificationKind,
    file: { dataFileId: number; transferId: number; target: string } | null,
    at: Date,
  ): Promise<boolean>;
  /** Forgets the message ids received before `before`. */
  forgetReceived(before: Date): Promise<void>;
  /** The host's last run; null when it never ran. */
  lastRun(hostId: number): Promise<RunShown | null>;
  /** Every host's runs by outcome and entries by how they ended, since it was first listed (/metrics). */
  totals(): Promise<AcquisitionTotals[]>;
  /** A Global Cache's counts by its centre id and the data's centre, since it first took a message (/metrics). */
  cacheTotals(): Promise<CacheTotal[]>;
  /** The destination's Acquisition hosts with their last runs, as the console's monitor shows them. */
  runsOf(destination: string): Promise<AcquisitionHostRuns[]>;
}

export const keyOf = (k: { target: string; uniqueName: string }) => `${k.target}\0${k.uniqueName}`;
