import type { NotificationKind } from './message.ts';

/** A WIS2 message as a subscription received it, and its topic: what a Global Cache republishes. */
export interface ReceivedMessage {
  topic: string;
  message: Record<string, unknown>;
}

/** A row of the outbox as a publisher claimed it, with what its message is made of. */
export interface OutboxItem {
  id: number;
  /** Given at the row's first claim and kept: a message sent again carries the same id. */
  messageId: string;
  kind: NotificationKind;
  /** Null for a Global Cache's republication of a message whose data it does not keep. */
  dataFileId: number | null;
  destination: string;
  target: string;
  notBefore: Date;
  attempts: number;
  /** The message the file came by (a subscription's), which a Global Cache republishes. */
  origin: ReceivedMessage | null;
  file: {
    source: string;
    size: number;
    registeredAt: Date;
    deletedAt: Date | null;
    /** Its transfer's metadata (`date`, `time`, `datetime`…). */
    metadata: Array<[string, string]>;
    sha512: string | null;
    /** The stored copy of its current instance once retrieved: the version a message links to. */
    stored: { key: string; size: number; sha512: string } | null;
  } | null;
  /** The destination's options text; null when the destination is gone. */
  destinationData: string | null;
  /** The first active open-access user associated with the destination, whose public URL the link gives. */
  openAccessUser: string | null;
}

export interface Wis2OutboxRepo {
  /**
   * Claims up to `limit` due rows (not done, `not_before` passed, not claimed by a live claim) until
   * `until`, oldest first, in a short transaction of their own (`for update skip locked`: publishers
   * on one database never take the same row). `newId` gives the message id of a row without one.
   */
  claim(now: Date, until: Date, limit: number, newId: () => string): Promise<OutboxItem[]>;
  /** Records rows as done: `published`, or why they were dropped. */
  finish(ids: readonly number[], outcome: string, at: Date): Promise<void>;
  /** Gives claimed rows back at once (the broker failed: they go first when it is back). */
  release(ids: readonly number[]): Promise<void>;
  /** Keeps a row from being claimed before `until` (its own failure), counting the attempt. */
  postpone(id: number, until: Date, error: string): Promise<void>;
  /**
   * Keeps a row until `until` for `reason` (core data with no open-access way), counting the attempt: unlike a
   * postponed row, it holds back the later rows of its destination, so that they still go out in order.
   */
  hold(id: number, until: Date, reason: string): Promise<void>;
  /** Deletes the rows done before `before`; answers how many. */
  prune(before: Date): Promise<number>;
  /** Remembers a data file's SHA-512, unless the file was given a new source since row `rowId`. */
  rememberSha512(dataFileId: number, rowId: number, sha512: string): Promise<void>;
}

/** The broker: publishes with QoS 1, no retain, and resolves once it acknowledged (PUBACK). */
export interface Wis2Broker {
  publish(topic: string, payload: string): Promise<void>;
  close(): Promise<void>;
}

/** Reads a source through the movers' reader: its SHA-512 in base64, refusing a size other than `size`. */
export type Sha512Reader = (source: string, size: number) => Promise<string>;
