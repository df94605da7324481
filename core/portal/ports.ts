/** What the data portal needs from the database, for every protocol it speaks. */

import type { AuthorizedKey } from './authorized-keys.ts';

/** The operations a portal permission can grant. */
export const PORTAL_OPERATIONS = ['dir', 'get', 'mtime', 'size', 'put', 'delete', 'mkdir', 'rename', 'rmdir'] as const;
export type PortalOperation = (typeof PORTAL_OPERATIONS)[number];
/** Given to every incoming user at its creation, as in the reference. */
export const DEFAULT_PORTAL_OPERATIONS: readonly PortalOperation[] = ['dir', 'get', 'mtime', 'size'];

export type SubscriberStatus = 'unverified' | 'verified' | 'active' | 'revoked';

export interface Subscriber {
  id: number;
  userId: string;
  name: string;
  email: string;
  iso: string;
  status: SubscriberStatus;
  tokenExpiresAt: Date | null;
  createdAt: Date;
  verifiedAt: Date | null;
  activatedAt: Date | null;
}

export interface PortalSession {
  userId: string;
  subscriberId: number | null;
  csrf: string;
  /** The fingerprint of the credentials it was opened with; null for a session older than it (which ends). */
  credential: string | null;
  lastSeenAt: Date;
}

/** A file of a destination as the portal shows it: the newest available transfer of its path. */
export interface PortalFile {
  transferId: number;
  dataFileId: number;
  /** The transfer's target: the path below the destination's directory. */
  path: string;
  source: string;
  size: number;
  checksum: string | null;
  /** The key of its stored copy once retrieved (core/store/file-bytes.ts); null: read from its source. */
  objectKey: string | null;
  /** The sums of the stored copy measured as it was retrieved (MD5 hex, SHA-512 base64); null before. */
  stored: { md5: string; sha512: string } | null;
  /** When the file was registered: its modification time. */
  modifiedAt: Date;
  status: string;
  scheduledAt: Date;
  expiresAt: Date;
  /** The label of the destination's type, for the INH line; only when the file was looked up by its path. */
  destinationType: string | null;
}

/**
 * One entry of a directory: a file, or a directory made by the `/` of the targets below it, with its
 * time (its newest file's, see folderTimes) when the listing asked for times; absent otherwise.
 */
export type PortalEntry =
  | { type: 'file'; name: string; file: PortalFile }
  | { type: 'directory'; name: string; modifiedAt?: Date | null };

/**
 * Who reads the tree, for its held files: the `registeredBy` of the user's own uploads
 * (`portal:<user>`, core/portal/uploads.ts), whose held ones (HOLD: standby or temporary) it sees;
 * null, or left out: no held file shows. Every other file shows to everyone who may list it.
 */
export type TreeViewer = string | null;

export interface Traffic {
  downloadBytes: number;
  uploadBytes: number;
  downloads: number;
  uploads: number;
}

/** What the login check reads of a user once its credentials are right (see admit). */
export interface Admission {
  options: Record<string, string>;
  /** The user's destinations, by name. */
  destinations: string[];
  permissions: PortalOperation[];
  /** The user's transfers running now, on every server. */
  connections: number;
}

export interface PortalRepo {
  /** Everything admit() reads of a user, in one round trip: each request of the portal logs in. */
  admission(userId: string, now: Date): Promise<Admission>;
  permissions(userId: string): Promise<PortalOperation[]>;
  grant(userId: string, operations: readonly PortalOperation[]): Promise<void>;
  revoke(userId: string, operations: readonly PortalOperation[]): Promise<void>;
  options(userId: string): Promise<Record<string, string>>;
  /** Sets an option, or removes it when `value` is null. */
  setOption(userId: string, name: string, value: string | null): Promise<void>;
  recordLogin(userId: string, at: Date, address: string): Promise<void>;
  /** When and from where the user last logged in to the portal; null when it never has. */
  lastLogin(userId: string): Promise<{ at: Date; address: string | null } | null>;

  /** Inserts an unverified subscriber; null when the e-mail is already registered to the user. */
  addSubscriber(
    subscriber: { userId: string; name: string; email: string; iso: string; tokenHash: string; tokenExpiresAt: Date },
    at: Date,
  ): Promise<number | null>;
  deleteSubscriber(id: number): Promise<void>;
  subscribers(userId: string): Promise<Subscriber[]>;
  subscriber(id: number): Promise<Subscriber | null>;
  /** The subscriber holding this unused verification token. */
  subscriberByToken(tokenHash: string): Promise<Subscriber | null>;
  /** The active subscriber of this user with this password. */
  activeSubscriberByPassword(userId: string, passwordHash: string): Promise<Subscriber | null>;
  /**
   * Moves a subscriber from one of the statuses `from` to `to`, in one statement (a token is used
   * once even when two requests race); false when it was not in one of them.
   */
  changeSubscriber(
    id: number,
    from: readonly SubscriberStatus[],
    /** `passwordHash` only with `active`: a subscriber in any other status keeps none. */
    to: { status: SubscriberStatus; at: Date; passwordHash?: string; clearToken?: boolean },
  ): Promise<boolean>;

  createSession(tokenHash: string, session: PortalSession): Promise<void>;
  session(tokenHash: string): Promise<PortalSession | null>;
  touchSession(tokenHash: string, at: Date): Promise<void>;
  deleteSession(tokenHash: string): Promise<void>;
  /** Ends the user's sessions not seen since `before` (their cookies would be refused anyway). */
  endIdleSessions(userId: string, before: Date): Promise<void>;

  /** The countries a subscriber can say it is from, by name. */
  countries(): Promise<Array<{ iso: string; name: string }>>;

  /**
   * Counts a transfer of the user, on any server, unless `max` (below 0: unlimited) are already
   * running: the check and the count are one transaction under the user's row lock. Answers the
   * connection's id, or null when the user is at its limit.
   */
  openConnection(c: {
    userId: string;
    server: string;
    protocol: string;
    max: number;
    now: Date;
    leaseMs: number;
  }): Promise<number | null>;
  renewConnections(ids: readonly number[], until: Date): Promise<void>;
  closeConnection(id: number): Promise<void>;
  /** The end of a transfer: closes its connection and adds its traffic, in one statement. */
  endConnection(id: number, traffic: { userId: string; minute: Date; protocol: string } & Traffic): Promise<void>;
  /** The user's transfers running now, on every server. */
  connections(userId: string, now: Date): Promise<number>;

  addTraffic(userId: string, minute: Date, protocol: string, traffic: Traffic): Promise<void>;
  /** What the user moved since `since`, over every protocol. */
  trafficSince(userId: string, since: Date): Promise<Traffic>;
  /** The user's traffic per minute since `since`, oldest first, for its chart. */
  trafficSeries(userId: string, since: Date): Promise<Array<Traffic & { minute: Date }>>;

  /**
   * A page of a destination's directory (`prefix` is '' or ends with '/'), in byte order of the
   * entries' names, after the name `after`: the files available at `now` (see the tree's rules),
   * with the directories' times when `times` asks for them.
   */
  list(
    destination: string,
    prefix: string,
    now: Date,
    page: { after: string | null; limit: number; times?: boolean },
    viewer?: TreeViewer,
  ): Promise<PortalEntry[]>;
  /**
   * The times of directories (a destination's own is path ''): each one's newest file at any depth
   * below it, as `viewer` sees them; a destination's own with none, the destination's creation;
   * another with none, null. In the order given.
   */
  folderTimes(
    folders: ReadonlyArray<{ destination: string; path: string }>,
    now: Date,
    viewer?: TreeViewer,
  ): Promise<Array<Date | null>>;
  /**
   * How many files of each directory (a destination's own is path '') `viewer` is shown, at any
   * depth below it, one per path as the listing shows them: counted up to `cap + 1` at most, a count
   * above `cap` meaning more than `cap`, so that a large directory costs no more than a small one.
   * In the order given.
   */
  folderCounts(
    folders: ReadonlyArray<{ destination: string; path: string }>,
    now: Date,
    viewer: TreeViewer,
    cap: number,
  ): Promise<number[]>;
  /**
   * A page of a destination's available files whose paths start with `prefix` (any string), all
   * levels at once, in byte order of their paths, after the path `after`.
   */
  files(
    destination: string,
    prefix: string,
    now: Date,
    page: { after: string | null; limit: number },
    viewer?: TreeViewer,
  ): Promise<PortalFile[]>;
  /** The available file at this path, or null. */
  file(destination: string, path: string, now: Date, viewer?: TreeViewer): Promise<PortalFile | null>;
  /**
   * One stored version of the file at this path (a WIS2 link's): the stored object `objectKey` of a
   * data file with a transfer at this path that is not expired, its file not deleted; its size and
   * sums are the object's. Null once the object was removed, or for a key of another file, or for
   * the current bytes of a held transfer not `viewer`'s.
   */
  version(
    destination: string,
    path: string,
    objectKey: string,
    now: Date,
    viewer?: TreeViewer,
  ): Promise<PortalFile | null>;
  /**
   * Records the MD5 of a data file's bytes, measured as they were uploaded (its ETag over S3), unless
   * one is known already.
   */
  recordChecksum(dataFileId: number, md5: string): Promise<void>;
  /** A data file's live transfer to this destination, available or not (an upload's INH line). */
  registered(destination: string, dataFileId: number): Promise<PortalFile | null>;
  /** When each of these destinations was created (an S3 bucket's CreationDate), by name; unknown names left out. */
  destinationsCreated(names: readonly string[]): Promise<Map<string, Date>>;

  /** The user's authorized keys for SFTP, oldest first. */
  authorizedKeys(userId: string): Promise<AuthorizedKey[]>;
  /** The user's key of this fingerprint, or null: a key is only ever looked up within its user. */
  authorizedKey(userId: string, fingerprint: string): Promise<AuthorizedKey | null>;
  /** Adds a key; false when the user already has it. */
  addAuthorizedKey(userId: string, key: AuthorizedKey, at: Date): Promise<boolean>;
  /** Removes a key; false when the user has none of that fingerprint. */
  removeAuthorizedKey(userId: string, fingerprint: string): Promise<boolean>;
}
