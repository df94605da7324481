import type { AcquisitionRepo } from './acquisition/ports.ts';
import type { ClientRepo, CredentialCache, FailedAuthLimits } from './api-clients/ports.ts';
import type { SecretBox } from './common/crypto.ts';
import type { Hashing } from './common/hashing.ts';
import type { ConsoleRepo } from './console/ports.ts';
import type { DataFileRepo, SourceProber } from './data-files/ports.ts';
import type { CountryRepo, DestinationRepo, ViewCache } from './destinations/ports.ts';
import type { DisseminationRepo, TransferRepo } from './dissemination/ports.ts';
import type { HostCheckRepo } from './host-checks/ports.ts';
import type { HostRepo, ReferenceRepo } from './hosts/ports.ts';
import type { IncomingUserRepo } from './incoming-users/ports.ts';
import type { MetadataRepo, NotePublisher } from './metadata/ports.ts';
import type { MonitorRepo } from './monitor/ports.ts';
import type { MonitoringRepo } from './monitoring/ports.ts';
import type { MailOutboxRepo } from './notifications/ports.ts';
import type { PortalLoginMemory } from './portal/login-memory.ts';
import type { PortalRepo } from './portal/ports.ts';
import type { QuotaLedger } from './portal/quota-ledger.ts';
import type { RetentionRepo } from './retention/ports.ts';
import type { LocalRetrievers, RetrievalRepo, SourceHostOpener } from './retrieval/ports.ts';
import type { ObjectStore } from './store/ports.ts';
import type { WebUserRepo } from './web-users/ports.ts';

/** What core needs from the outside world. Each shell (Node, Workers, tests) provides it. */
export interface Ports {
  repos: Repositories;
  /**
   * The time stored and compared in the database (leases, queue and due times): the database's own
   * in the shells, so that processes whose clocks disagree still agree on what has lapsed or is due.
   */
  clock: () => Date;
  secrets: SecretBox;
  /** scrypt and the digests of files' bytes: the runtime's native code where it has some. */
  hashing: Hashing;
  logger: Logger;
  /** Work that must finish after the response (Workers' ctx.waitUntil; a tracked promise on Node). */
  waitUntil: (work: Promise<unknown>) => void;
  credentialCache: CredentialCache;
  /** Reference data that only a migration changes (destination types), loaded once per process. */
  memo: Memo;
  /** Lists rendered by the database, kept with their version (see DestinationRepo.listView). */
  views: ViewCache;
  /** The failed-authentication rules, for the API and the console's sign-in (see checkLimited). */
  failedAuth: FailedAuthLimits;
  /** The portal's successful logins of the last moment (see PortalLoginMemory). */
  portalLogins: PortalLoginMemory;
  /** What the portal's running downloads sent, per user, against its download quota (see QuotaLedger). */
  portalDownloads: QuotaLedger;
  /** What the portal's running uploads received, per user, against its upload quota. */
  portalUploads: QuotaLedger;
  /** Publishes a destination's HTML note to the external monitoring system; null when not configured. */
  notes: NotePublisher | null;
  /** PRS/ERR event entries, one line each (a file or stdout on Node, console output on Workers). */
  events: EventSink;
  /** Checks a data file's source is allowed and reachable, and measures it, before anything is stored. */
  sources: SourceProber;
  /**
   * Reads paths on a destination's Source host: a put to a destination that has one measures its
   * source there. Null where no transfer method can read (a Worker).
   */
  sourceHosts: SourceHostOpener | null;
  /** Tells the movers there may be work now (a put, a requeue, a start); they also look on their own. */
  wakeMovers: () => void;
  /** Sends the portal's e-mails; null when no SMTP server is configured. */
  mailer: Mailer | null;
  /**
   * Where registered files are retrieved to before they are sent, and read from by every reader;
   * null where sources are read at each send instead (`ECPDS_RETRIEVAL=none`).
   */
  store: ObjectStore | null;
  /** The retrievers of this process, whose free places its puts may claim their files for. */
  localRetrievers: LocalRetrievers;
}

/** An e-mail of plain text to one recipient. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
}

export interface Memo {
  get<T>(key: string, load: () => Promise<T>): Promise<T>;
}

export interface EventSink {
  write(entry: string): void;
}

/** The authenticated caller of one request. */
export interface Caller {
  username: string;
  showSensitiveInfo: boolean;
}

/** What a handler gets besides its input: the ports, and who is asking in which request. */
export interface Ctx {
  ports: Ports;
  requestId: string;
  caller: Caller | null;
}

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface Repositories {
  clients: ClientRepo;
  incomingUsers: IncomingUserRepo;
  webUsers: WebUserRepo;
  countries: CountryRepo;
  destinations: DestinationRepo;
  hosts: HostRepo;
  references: ReferenceRepo;
  metadata: MetadataRepo;
  monitoring: MonitoringRepo;
  /** What the console's monitor pages read. */
  monitor: MonitorRepo;
  dataFiles: DataFileRepo;
  retrieval: RetrievalRepo;
  /** Acquisition hosts' runs, and what they acquired before. */
  acquisition: AcquisitionRepo;
  /** Checked hosts' checks: the one under way and the latest results (core/host-checks). */
  hostChecks: HostCheckRepo;
  transfers: TransferRepo;
  dissemination: DisseminationRepo;
  console: ConsoleRepo;
  portal: PortalRepo;
  /** The purge of ended transfers past the retention limits (core/retention). */
  retention: RetentionRepo;
  /** The mails of destinations' and hosts' events not sent yet (core/notifications). */
  mailOutbox: MailOutboxRepo;
  /** Runs `work` in one database transaction with repositories bound to it. */
  transaction<T>(work: (repos: Repositories) => Promise<T>): Promise<T>;
  /** A cheap round trip to the database (health checks); rejects when it is unreachable. */
  ping(): Promise<void>;
}
