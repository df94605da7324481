import type { DisseminationHost } from '../dissemination/ports.ts';

/** A data file a retriever holds: its current instance's source, to be stored under `key`. */
export interface RetrievalClaim {
  dataFileId: number;
  instance: number;
  /** Counts the attempts of this instance: the attempt's fence, and part of its object key. */
  tries: number;
  source: string;
  size: number;
  /** The destination the file was put to (its first transfer's): whose Source host applies. */
  destination: string;
  /** Whether that destination names a Source host, as the claim found it; looked up when unknown. */
  sourceHostNamed?: boolean;
  /** The Acquisition host the file was listed on: its source is read there, whatever the destination names. */
  acquiredFrom?: number | null;
}

/** What a retrieval stored: the object and the sums computed while it was written. */
export interface StoredCopy {
  key: string;
  size: number;
  /** Hex, as the reference's checksums and S3's ETag. */
  md5: string;
  /** Base64, as WIS2's `integrity` and RFC 9530's `Repr-Digest`. */
  sha512: string;
}

/** A retrieval's outcome to record: who stored which copy of the claimed file, and the history's comment. */
export interface StoredRecord {
  claim: RetrievalClaim;
  mover: string;
  copy: StoredCopy;
  comment: string;
}

/** A transfer of a retrieved or failed file, as its RET and ERR lines describe it. */
export interface RetrievedTransfer {
  transferId: number;
  destination: string;
  destinationType: string;
  target: string;
  scheduledAt: Date;
  /** The status it took: WAIT or HOLD once retrieved, SCHE after a failure. */
  status: string;
}

/** A stored copy a mover found missing or damaged, while sending attempt `attempt` of transfer `transferId`. */
export interface LostCopy {
  dataFileId: number;
  objectKey: string;
  transferId: number;
  attempt: number;
  mover: string;
  reason: string;
}

/** A destination's Source host (`hostForSourceName`), where the paths put to it are read. */
export interface SourceHost extends DisseminationHost {
  active: boolean;
}

export interface RetrievalRepo {
  /**
   * The host the destination names as its Source host: null when it names none; `host` null
   * when the host it names does not exist.
   */
  sourceHostOf(destination: string): Promise<{ name: string; host: SourceHost | null } | null>;
  /** A host by its id (an acquired file's Acquisition host); null when it does not exist. */
  hostById(hostId: number): Promise<SourceHost | null>;
  /**
   * Takes up to `limit` files whose transfers wait for their bytes (SCHE, or FETC under a lapsed
   * lease), due and not expired, most urgent first; their transfers go to FETC with history.
   */
  claim(mover: string, leaseMs: number, limit: number): Promise<RetrievalClaim[]>;
  /** Extends the leases this retriever still holds; answers the files it holds. */
  renew(
    mover: string,
    leaseMs: number,
    files: ReadonlyArray<Pick<RetrievalClaim, 'dataFileId' | 'tries'>>,
  ): Promise<number[]>;
  /**
   * Records each stored copy and releases its file's transfers (WAIT, or HOLD for standby), with
   * history, in one transaction; answers, in order, each file's transfers, or null for a file its
   * retriever no longer holds (nothing of it changed).
   */
  stored(records: StoredRecord[]): Promise<Array<RetrievedTransfer[] | null>>;
  /**
   * Puts the file's transfers back to SCHE with the reason in their history, retried after
   * `retryInMs` (by the database's clock); null when the retriever no longer holds the file.
   */
  failed(claim: RetrievalClaim, mover: string, reason: string, retryInMs: number): Promise<RetrievedTransfer[] | null>;
  /**
   * Puts a file whose stored copy `lost.objectKey` is lost back to retrieval, in one transaction:
   * its stored copy forgotten and its retrieval due at once, its transfers waiting to be sent (and
   * the mover's attempt) to SCHE with the reason in their history. False, changing nothing, when
   * the file has another copy by now, was deleted, or the attempt is no longer the mover's.
   */
  refetch(lost: LostCopy): Promise<boolean>;
}

/** Where a file's bytes come from: its source, or a path on its destination's Source host. */
export interface RetrievalSource {
  size: number | null;
  stream: AsyncIterable<Uint8Array>;
  /** The Source host read, for the RET line; null for a local path, a URL or an R2 object. */
  host: { hostId: string; login: string; address: string; protocol: string } | null;
}

/** Reads the files a host acquired otherwise than by listing (a WIS2 subscription's links). */
export interface AcquiredReader {
  /** Whether the host's files are read here rather than with its transfer method. */
  reads(host: SourceHost): boolean;
  open(host: SourceHost, path: string, signal: AbortSignal): Promise<RetrievalSource>;
}

/** Opens a path on a destination's Source host, or on the host a file was acquired from. */
export interface SourceHostOpener {
  /** Null when the destination names no Source host. */
  open(destination: string, path: string, signal: AbortSignal): Promise<RetrievalSource | null>;
  openOn(hostId: number, path: string, signal: AbortSignal): Promise<RetrievalSource>;
}

/** A place kept free in a retriever of this process for a put that claims its file in its own statement. */
export interface RetrievalPlace {
  mover: string;
  leaseMs: number;
  /** Retrieves the file the put claimed for this place. */
  take(claim: RetrievalClaim): void;
  /** Gives the place back: the put claimed nothing. */
  release(): void;
}

/** A retriever offering its free places to this process's puts. */
export interface PlaceOffering {
  reserve(): RetrievalPlace | null;
}

/**
 * The retrievers running in this process. A put that finds a free place among them claims its file for
 * it in the statement that registers it: no claim's round trip, and the bytes move as soon as it commits.
 */
export interface LocalRetrievers extends PlaceOffering {
  /** Adds a retriever; the function returned removes it. */
  add(retriever: PlaceOffering): () => void;
}
