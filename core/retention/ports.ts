/** What one purge batch removed; each batch is one short transaction. */
export interface PurgedBatch {
  transfers: number;
  history: number;
  dataFiles: number;
}

/** The purge's totals since the database was created, over every process that sweeps. */
export interface PurgeTotals {
  transfers: number;
  history: number;
  dataFiles: number;
}

export interface RetentionRepo {
  /**
   * Deletes up to `limit` ended transfers (DONE, FAIL, STOP, no attempt still writing) last changed
   * before `before`, oldest first, with their history and the data files no one refers to any more.
   * One still shown at `now` (before its expiry) whose file WIS2 announced stays until its expiry is told.
   */
  purgeAged(before: Date, limit: number, now?: Date): Promise<PurgedBatch>;
  /**
   * Reads up to `limit` transfers registered before `settledBefore`, past the last one read, and
   * deletes the ended transfers of their identities (destination and target) beyond the `keep` newest.
   * `read` is how many transfers were read: fewer than `limit` when none are left to read.
   */
  purgeIdentities(keep: number, limit: number, settledBefore: Date): Promise<PurgedBatch & { read: number }>;
  totals(): Promise<PurgeTotals>;
  /**
   * Forgets up to `limit` stored objects no transfer needs (core/retention/objects.ts): those of data
   * files purged, deleted or whose transfers all expired by `now`, and those superseded before
   * `supersededBefore`; answers their keys and sizes, to be removed from the store.
   */
  forgetObjects(now: Date, supersededBefore: Date, limit: number): Promise<Array<{ key: string; size: number }>>;
  /** Which of these keys a stored_objects row names. */
  knownObjects(keys: readonly string[]): Promise<Set<string>>;
  /** The objects the store holds by the database's count, and their bytes (superseded ones included). */
  storeUsage(): Promise<{ objects: number; bytes: number }>;
}
