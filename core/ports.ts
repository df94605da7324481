import type { PortalService } from './incoming-users/operations.ts';
import type { SecretBox, Sha256Base64 } from './common/crypto.ts';
import type { SerializedAnswer } from './common/operation.ts';
import type {
  Destination, DestinationFilter, DestinationInput, DestinationType, Ecuser, EctransModule, Host, HostInput, TransferMethod,
} from './destinations/model.ts';
import type { FieldDefinition, MetadataField, StoredValue } from './metadata/model.ts';
import type { StepFilter, StepNotification, StepState } from './monitoring/model.ts';

/** What core needs from the outside world. Each shell (Node, Workers, tests) provides it. */
export interface Ports {
  repos: Repositories;
  clock: () => Date;
  secrets: SecretBox;
  logger: Logger;
  /** Work that must finish after the response (Workers' ctx.ports.waitUntil; a tracked promise on Node). */
  waitUntil: (work: Promise<unknown>) => void;
  credentialCache: CredentialCache;
  /** Reference data that only a migration changes (destination types), loaded once per process. */
  memo: Memo;
  /** Lists rendered by the database, kept with their version (see DestinationRepo.listView). */
  views: ViewCache;
  /** Failed authentications per username and client address; past the limit, callers wait (429). */
  authThrottle: AuthThrottle;
  /** Publishes a destination's HTML note to the external monitoring system; null when not configured. */
  notes: NotePublisher | null;
  /** PRS/ERR event entries, one line each (a file or stdout on Node, console output on Workers). */
  events: EventSink;
  /** Checks a data file's source is allowed and reachable, and measures it, before anything is stored. */
  sources: SourceProber;
}

/** Answers serialized ahead, each with the version of the data it shows. */
export interface ViewCache {
  get(key: string): { version: number; answer: SerializedAnswer } | undefined;
  set(key: string, entry: { version: number; answer: SerializedAnswer }): void;
}

export interface Memo {
  get<T>(key: string, load: () => Promise<T>): Promise<T>;
}

export interface EventSink {
  write(entry: string): void;
}

export interface SourceProber {
  probe(source: string): Promise<{ size: number }>;
}

export type NotePublisher = (destination: string, html: string) => Promise<void>;

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

export interface CredentialCache {
  /** A client record read within the last CLIENT_RECORD_TTL_MS, or null. */
  client(username: string, now: number): ApiClient | null;
  rememberClient(client: ApiClient, now: number): void;
  /** Drops a client's record after a change, so this process sees the change at once. */
  forgetClient(username: string): void;
  has(key: string, now: number): boolean;
  add(key: string, now: number): void;
  /** True at most once a minute per client: when its last-used time is worth writing. */
  shouldTouch(username: string, now: number): boolean;
  /** The key for keyed hashes of presented credentials; never leaves the process. */
  readonly hashKey: Uint8Array;
  /** SHA-256 in base64 for checking presented secrets against stored hashes (core/crypto.ts). */
  readonly digest: Sha256Base64;
}

export interface AuthThrottle {
  /** Seconds until this username (and address, when known) may try again; 0 when it may now. */
  retryAfter(username: string, address: string | undefined, now: number): number;
  /** Records one failed authentication of this username from this address. */
  fail(username: string, address: string | undefined, now: number): void;
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
  dataFiles: DataFileRepo;
  console: ConsoleRepo;
  /** Runs `work` in one database transaction with repositories bound to it. */
  transaction<T>(work: (repos: Repositories) => Promise<T>): Promise<T>;
  /** A cheap round trip to the database (health checks); rejects when it is unreachable. */
  ping(): Promise<void>;
}

export type ClientOrigin = 'console' | 'cli' | 'properties' | 'bootstrap';

export interface ApiClient {
  username: string;
  secretHash: string;
  permissions: string[];
  origin: ClientOrigin;
  createdAt: Date;
  updatedAt: Date;
  lastUsedAt: Date | null;
}

export interface ClientRepo {
  find(username: string): Promise<ApiClient | null>;
  list(): Promise<ApiClient[]>;
  count(): Promise<number>;
  /** Inserts unless the username exists; says whether it inserted. */
  insert(client: ApiClient): Promise<boolean>;
  update(username: string, patch: { secretHash?: string; permissions?: string[]; updatedAt: Date }): Promise<boolean>;
  delete(username: string): Promise<boolean>;
  touch(username: string, at: Date): Promise<void>;
}

export interface IncomingUser {
  id: string;
  email: string;
  iso: string;
  portalService: PortalService;
  active: boolean;
  /** AES-GCM sealed; null when the user was created without a password. */
  passwordSealed: string | null;
  lastLoginDate: Date | null;
}

export interface IncomingUserWithAssociations extends IncomingUser {
  associations: string[];
}

export interface IncomingUserRepo {
  find(id: string): Promise<IncomingUser | null>;
  insert(user: IncomingUser, at: Date): Promise<void>;
  update(id: string, patch: Partial<Omit<IncomingUser, 'id'>>, at: Date): Promise<void>;
  list(filter: { destination?: string }): Promise<IncomingUserWithAssociations[]>;
  addAssociation(id: string, destination: string): Promise<void>;
  /** Says whether an association was removed. */
  removeAssociation(id: string, destination: string): Promise<boolean>;
  associations(id: string): Promise<string[]>;
}

export interface WebUser {
  id: string;
  name: string | null;
  active: boolean;
  passwordSealed: string;
  /** scrypt hash checked at console login. */
  passwordHash: string;
}

export interface WebUserRepo {
  find(id: string): Promise<WebUser | null>;
  /** Inserts unless the id exists; says whether it inserted. */
  insert(user: WebUser, at: Date): Promise<boolean>;
  update(id: string, patch: Partial<Omit<WebUser, 'id'>>, at: Date): Promise<void>;
  listActive(filter: { category?: string }): Promise<Array<WebUser & { categories: string[] }>>;
  delete(id: string): Promise<boolean>;
}

export interface CountryRepo {
  exists(iso: string): Promise<boolean>;
}

export interface DestinationRepo {
  exists(name: string): Promise<boolean>;
  get(name: string): Promise<Destination | null>;
  /** Ordered by name. */
  list(filter: DestinationFilter): Promise<Destination[]>;
  /**
   * The same destinations as a JSON array of destinationView records, rendered by the database,
   * and the version of the list it shows; when `knownVersion` is still current nothing is
   * rendered (view is null).
   */
  listView(filter: DestinationFilter, knownVersion: number | null): Promise<{ version: number; view: string | null }>;
  names(): Promise<string[]>;
  types(): Promise<DestinationType[]>;
  typeExists(id: number): Promise<boolean>;
  /** Countries with at least one destination, ordered by iso. */
  countriesInUse(): Promise<Array<{ iso: string; name: string }>>;
  /** Inserts unless the name exists; says whether it inserted. */
  insert(destination: DestinationInput): Promise<boolean>;
  aliasesFrom(names: string[]): Promise<Array<{ aliasFrom: string; aliasTo: string }>>;
  addAlias(aliasFrom: string, aliasTo: string): Promise<void>;
}

export interface HostRepo {
  find(hostid: number): Promise<Host | null>;
  setData(hostid: number, data: string): Promise<void>;
  insert(host: HostInput): Promise<number>;
  /** A host with this nickname already associated with a local destination (the shared-host rule). */
  sharedByNickname(nickname: string): Promise<number | null>;
  associate(destination: string, hostid: number, priority: number): Promise<void>;
  /** Associations of these destinations, by destination then priority. */
  ofDestinations(names: string[]): Promise<Array<{ destination: string; priority: number; host: Host }>>;
}

/** Owners, transfer methods and their modules: shared reference data of destinations and hosts. */
export interface ReferenceRepo {
  ecusers(names: string[]): Promise<Ecuser[]>;
  methods(names: string[]): Promise<Array<TransferMethod & { ectransModule: EctransModule | null }>>;
  ensureEcuser(ecuser: Ecuser): Promise<void>;
  ensureModule(module: EctransModule): Promise<void>;
  ensureMethod(method: TransferMethod): Promise<void>;
}

export interface MetadataRepo {
  /** Every definition, ordered by category, position, name. */
  fields(): Promise<MetadataField[]>;
  upsertField(definition: FieldDefinition): Promise<{ id: number; created: boolean }>;
  values(destination: string): Promise<StoredValue[]>;
  flags(destination: string): Promise<number[]>;
  /** Removes every value of the destination except those of `keepFieldIds`, then inserts `values`. */
  replaceValues(destination: string, values: StoredValue[], keepFieldIds: number[]): Promise<void>;
  replaceFlags(destination: string, fieldIds: number[]): Promise<void>;
  /** Stores `value` as the first value of the field where the destination has none yet. */
  seedDefault(fieldId: number, value: string, destinations?: string[]): Promise<void>;
}

export interface MonitoringRepo {
  /** The latest state of the notification's key, locked until the transaction ends. */
  latest(key: Omit<StepNotification, 'code' | 'scheduledTime' | 'at'>): Promise<StepState | null>;
  /** Appends the notification to the history and makes it the key's latest state. */
  record(state: StepState): Promise<void>;
  /** For each product and time: the latest state of every key at its latest product time. */
  summary(filter: StepFilter): Promise<StepState[]>;
  /** Every notification of one step, newest first. */
  history(filter: Required<Pick<StepFilter, 'product' | 'time' | 'step' | 'type'>> & Pick<StepFilter, 'status'>): Promise<StepState[]>;
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

export interface ExpiredTransfer {
  transferId: number;
  destination: string;
  destinationType: number;
  target: string;
  size: number;
  scheduledAt: Date;
  networkCode: string | null;
}

export interface DataFileRepo {
  /**
   * Inserts file and transfer and gives the file's id; 'taken' when a live transfer already
   * holds the unique key, 'no destination' when the destination does not exist.
   */
  register(file: { source: string; size: number; registeredBy: string }, transfer: NewTransfer): Promise<number | 'taken' | 'no destination'>;
  /** The live transfer holding the key, if any. */
  findLive(destination: string, target: string, uniqueName: string): Promise<{ transferId: number; dataFileId: number } | null>;
  requeue(transferId: number, file: { source: string; size: number }, transfer: NewTransfer): Promise<void>;
  find(id: number): Promise<{ id: number; size: number; deletedAt: Date | null } | null>;
  /** Marks the file deleted and its transfers STOP. */
  markDeleted(id: number, at: Date): Promise<void>;
  /** Fails every transfer not done before its expiry; returns what it failed. */
  expire(now: Date, message: string): Promise<ExpiredTransfer[]>;
}

export interface AclCategory {
  id: string;
  label: string;
  consoleAccess: boolean;
}

export interface ConsoleSession {
  userId: string;
  csrf: string;
  lastSeenAt: Date;
}

export interface AuditEntry {
  at: Date;
  actor: string;
  action: string;
  targetKind: string;
  target: string;
  detail: string | null;
}

/** What the administration console stores beyond the API's own records. */
export interface ConsoleRepo {
  categories(): Promise<AclCategory[]>;
  /** Every web user, active or not, with its categories, ordered by id. */
  webUsers(): Promise<Array<WebUser & { categories: string[] }>>;
  categoriesOf(userId: string): Promise<string[]>;
  grant(userId: string, category: string): Promise<void>;
  revoke(userId: string, category: string): Promise<boolean>;
  createSession(tokenHash: string, session: ConsoleSession): Promise<void>;
  session(tokenHash: string): Promise<ConsoleSession | null>;
  touchSession(tokenHash: string, at: Date): Promise<void>;
  deleteSession(tokenHash: string): Promise<void>;
  /** Failed logins of a key (user or address) in its current window, if that started after `since`. */
  failures(key: string, since: Date): Promise<{ count: number; windowStart: Date } | null>;
  recordFailure(key: string, at: Date, windowStartsAfter: Date): Promise<void>;
  clearFailures(key: string): Promise<void>;
  audit(entry: AuditEntry): Promise<void>;
  auditTrail(limit: number): Promise<AuditEntry[]>;
}
