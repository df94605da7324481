import type { FailedAuthRules } from './auth-throttle.ts';

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
}

/** Failed authentications by key (a username, a username at an address, an address). */
export interface FailureLog {
  /** The times (ms) of the key's failures after `since`, oldest first: the `keep` newest at most. */
  recent(key: string, since: number, keep: number): Promise<readonly number[]>;
  /** Records a failure; the log need keep no more than the `keep` newest of a key, nor any at or before `since`. */
  add(key: string, at: number, since: number, keep: number): Promise<void>;
}

/** What the failed-authentication rules need besides a log: the rules, and a way to slow an answer. */
export interface FailedAuthLimits {
  rules: FailedAuthRules;
  /** The API's failures (the console keeps its own in the database). */
  apiLog: FailureLog;
  sleep(ms: number): Promise<void>;
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
