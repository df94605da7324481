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

/** Seconds to wait before trying again; 0 when there is nothing to wait for. */
export interface AuthThrottleWait {
  /** Failures of this username, everywhere or from this address: refused even with the right secret. */
  username: number;
  /** Failures of any usernames from this address: only wrong credentials are refused for these. */
  address: number;
}

export interface AuthThrottle {
  retryAfter(username: string, address: string | undefined, now: number): AuthThrottleWait;
  /** Records one failed authentication of this username from this address. */
  fail(username: string, address: string | undefined, now: number): void;
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
