import type { PortalService } from './catalogue.ts';
import type { SecretBox } from './crypto.ts';

/** What core needs from the outside world. Each shell (Node, Workers, tests) provides it. */
export interface Ports {
  repos: Repositories;
  clock: () => Date;
  secrets: SecretBox;
  logger: Logger;
  /** Work that must finish after the response (Workers' ctx.waitUntil; a tracked promise on Node). */
  waitUntil: (work: Promise<unknown>) => void;
  credentialCache: CredentialCache;
}

/** The authenticated caller of one request. */
export interface Caller {
  username: string;
  showSensitiveInfo: boolean;
}

export interface Ctx extends Ports {
  requestId: string;
  caller: Caller | null;
}

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface CredentialCache {
  has(key: string, now: number): boolean;
  add(key: string, now: number): void;
  /** True at most once a minute per client: when its last-used time is worth writing. */
  shouldTouch(username: string, now: number): boolean;
  /** The key for keyed hashes of presented credentials; never leaves the process. */
  readonly hashKey: Uint8Array;
}

export interface Repositories {
  clients: ClientRepo;
  incomingUsers: IncomingUserRepo;
  webUsers: WebUserRepo;
  countries: CountryRepo;
  destinations: DestinationRepo;
  /** Runs `work` in one database transaction with repositories bound to it. */
  transaction<T>(work: (repos: Repositories) => Promise<T>): Promise<T>;
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
}
