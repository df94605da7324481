import type { Ports } from '../ports.ts';
import type { ObjectStore } from '../store/ports.ts';

/**
 * What the sweep keeps of the store. A data file's objects go once none of its transfers is left to
 * serve them: the file purged, deleted, or every transfer of it expired. An object superseded by an
 * update (a forced put's new bytes) stays for the links that announced it for `supersededKeepHours`
 * after its replacement was stored (24 h: what a WIS2 Global Cache keeps a file), never past its file.
 */
export interface StoreRetention {
  supersededKeepHours: number;
  /** How old an object no data file knows must be before it goes (a crash between its write and its record). */
  orphanGraceMs: number;
  batchSize: number;
  maxBatches: number;
}

export const DEFAULT_STORE_RETENTION: StoreRetention = {
  supersededKeepHours: 24,
  orphanGraceMs: 3600_000,
  batchSize: 1000,
  maxBatches: 100,
};

/** A store is listed whole for its orphans at most this often by one process: a listing costs what the store holds. */
const ORPHAN_SWEEP_EVERY_MS = 10 * 60_000;
const orphansSweptAt = new WeakMap<ObjectStore, number>();

export interface StoreSweep {
  objects: number;
  bytes: number;
  orphans: number;
}

/**
 * Removes the objects no transfer needs any more, in batches: each batch forgets its objects in one
 * short transaction, then removes them from the store. A process that dies in between leaves objects
 * no data file knows, removed as orphans after the grace period; removing again is harmless.
 */
export async function sweepStore(
  ports: Ports,
  limits: StoreRetention = DEFAULT_STORE_RETENTION,
  options: { orphans?: boolean } = {},
): Promise<StoreSweep> {
  const { store } = ports;
  const result: StoreSweep = { objects: 0, bytes: 0, orphans: 0 };
  if (store === null) return result;
  const repo = ports.repos.retention;
  const now = ports.clock();
  const supersededBefore = new Date(now.getTime() - limits.supersededKeepHours * 3600_000);
  for (let i = 0; i < limits.maxBatches; i++) {
    const gone = await repo.forgetObjects(now, supersededBefore, limits.batchSize);
    if (gone.length > 0) await store.remove(gone.map((o) => o.key));
    result.objects += gone.length;
    result.bytes += gone.reduce((sum, o) => sum + o.size, 0);
    if (gone.length < limits.batchSize) break;
  }
  const due = (orphansSweptAt.get(store) ?? Number.NEGATIVE_INFINITY) + ORPHAN_SWEEP_EVERY_MS <= Date.now();
  if (options.orphans ?? due) {
    orphansSweptAt.set(store, Date.now());
    result.orphans = await sweepOrphans(ports, store, limits);
  }
  return result;
}

/** Removes the objects of the store older than the grace period that no stored_objects row names. */
async function sweepOrphans(ports: Ports, store: ObjectStore, limits: StoreRetention) {
  // The store's own clock wrote the times listed: compared with this process's, not the database's.
  const graceBefore = Date.now() - limits.orphanGraceMs;
  let removed = 0;
  let batch: string[] = [];
  const flush = async () => {
    const known = await ports.repos.retention.knownObjects(batch);
    const orphans = batch.filter((key) => !known.has(key));
    if (orphans.length > 0) {
      await store.remove(orphans);
      ports.logger.info('stored objects no data file knows removed', { store: store.description, objects: orphans });
    }
    removed += orphans.length;
    batch = [];
  };
  for await (const object of store.list()) {
    if (object.modifiedAt.getTime() >= graceBefore) continue;
    batch.push(object.key);
    if (batch.length >= limits.batchSize) await flush();
  }
  if (batch.length > 0) await flush();
  return removed;
}
