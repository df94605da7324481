import { messageOf } from '../common/errors.ts';
import type { PlaceOffering, RetrievalClaim, RetrievalPlace } from './ports.ts';
import { type RetrievalDeps, recordTogether, retrieve } from './retrieve.ts';

export interface RetrieverOptions {
  /** The mover's name: what the history and the RET lines say retrieved the file. */
  name: string;
  /** Files retrieved at once. */
  concurrency: number;
  /** How long a claimed file stays this retriever's without a renewal. */
  leaseMs: number;
  /** Looks for files to retrieve at least this often, even without a wake-up. */
  pollMs: number;
  /**
   * How long places freed one by one wait for half the places to be free before they are claimed all
   * the same (20 ms unless given): small files are claimed several at once, and a few long retrievals
   * never hold the others back for longer than this.
   */
  gatherMs?: number;
}

export interface Retriever extends PlaceOffering {
  wake(): void;
  inFlight(): number;
  /** Stops claiming and aborts the retrievals under way; their files are tried again at once. */
  stop(): Promise<void>;
}

class RetrievalTakenAway extends Error {}

const GATHER_MS = 20;

/**
 * Retrieves the registered files into the store, a few at once: each claim is one short
 * transaction, the bytes move with no transaction open, and a file whose lease could not be
 * renewed (another retriever took it over) is abandoned.
 */
export function startRetriever(given: RetrievalDeps, options: RetrieverOptions): Retriever {
  const { ports, repo } = given;
  // The movers are woken once the file's place is free, not before (see start).
  const deps = { ...given, record: recordTogether(repo), released: () => undefined };
  const running = new Map<number, { claim: RetrievalClaim; controller: AbortController; done: Promise<unknown> }>();
  // Places kept for puts claiming their files in their own statements: not claimed for meanwhile.
  let reserved = 0;
  let stopping = false;
  let pending = true;
  let wakeUp: (() => void) | null = null;
  const wake = () => {
    pending = true;
    wakeUp?.();
  };
  const idle = () =>
    new Promise<void>((resolve) => {
      if (pending) return resolve();
      const timer = setTimeout(done, options.pollMs);
      function done() {
        clearTimeout(timer);
        wakeUp = null;
        resolve();
      }
      wakeUp = done;
    });

  const renewal = setInterval(() => void renew(), Math.max(100, Math.floor(options.leaseMs / 3)));
  renewal.unref?.();
  async function renew() {
    const held = [...running.values()].map((r) => r.claim);
    if (held.length === 0) return;
    try {
      const kept = new Set(await repo.renew(options.name, options.leaseMs, held));
      // Only the claims this renewal asked for: one made while it was on its way was not in it.
      for (const claim of held) {
        const r = running.get(claim.dataFileId);
        if (r?.claim === claim && !kept.has(claim.dataFileId)) {
          r.controller.abort(
            new RetrievalTakenAway(`DataFile ${claim.dataFileId} was taken away from ${options.name}`),
          );
        }
      }
    } catch (error) {
      ports.logger.error('retrieval lease renewal failed', { mover: options.name, reason: messageOf(error) });
    }
  }

  // Claims wait for half the places to be free (see gatherMs): each then takes several files in one statement,
  // and files claimed together tend to end together, their records sharing statements too.
  const gatherMs = options.gatherMs ?? GATHER_MS;
  let freeSince: number | null = null;
  let gathering: ReturnType<typeof setTimeout> | null = null;
  function gathered(free: number) {
    if (free >= Math.ceil(options.concurrency / 2) || running.size === 0) return true;
    const now = Date.now();
    freeSince ??= now;
    if (now - freeSince >= gatherMs) return true;
    gathering ??= setTimeout(
      () => {
        gathering = null;
        wake();
      },
      gatherMs - (now - freeSince),
    );
    return false;
  }

  const loop = (async () => {
    while (!stopping) {
      pending = false;
      try {
        const free = options.concurrency - running.size - reserved;
        if (free > 0 && gathered(free)) {
          freeSince = null;
          const claims = await repo.claim(options.name, options.leaseMs, free);
          for (const claim of claims) start(claim);
          if (claims.length === free) pending = true;
        }
      } catch (error) {
        ports.logger.error('retrieval claim failed', { mover: options.name, reason: messageOf(error) });
      }
      if (!stopping) await idle();
    }
  })();

  function reserve(): RetrievalPlace | null {
    if (stopping || running.size + reserved >= options.concurrency) return null;
    reserved++;
    let kept = true;
    const giveBack = () => {
      if (!kept) return false;
      kept = false;
      reserved--;
      return true;
    };
    return {
      mover: options.name,
      leaseMs: options.leaseMs,
      take(claim) {
        if (!giveBack()) return;
        start(claim);
        // Stopped meanwhile: handed back at once, as the retrievals under way were.
        if (stopping) running.get(claim.dataFileId)?.controller.abort(interrupted());
      },
      release() {
        if (giveBack()) wake();
      },
    };
  }
  const interrupted = () => new Error(`Interrupted: DataMover=${options.name} stopped`);

  function start(claim: RetrievalClaim) {
    const controller = new AbortController();
    let stored = false;
    const done = retrieve(deps, options.name, claim, controller.signal)
      .then((outcome) => {
        stored = outcome === 'stored';
      })
      .finally(() => {
        running.delete(claim.dataFileId);
        wake();
        // Where the movers' wake-up reaches this retriever too, it comes in the same turn as its own: one claim.
        if (stored) ports.wakeMovers();
      });
    running.set(claim.dataFileId, { claim, controller, done });
  }

  return {
    wake,
    reserve,
    inFlight: () => running.size,
    async stop() {
      stopping = true;
      wakeUp?.();
      await loop;
      for (const r of running.values()) r.controller.abort(interrupted());
      await Promise.all([...running.values()].map((r) => r.done));
      clearInterval(renewal);
      if (gathering) clearTimeout(gathering);
    },
  };
}
