/** What one round did: nothing was due, some was done (more may be due), or it must be tried again later. */
export type DrainOutcome = 'idle' | 'busy' | 'failed';

export interface DrainLoopOptions {
  /** One round over what is due. A throw counts as 'failed', once `onDrainError` is told. */
  drain: () => Promise<DrainOutcome>;
  onDrainError: (error: unknown) => void;
  /**
   * Housekeeping done only when idle, so that it never holds up what is due, and at most once each `everyMs` of
   * `clock` (the one the rows are timed with). A failure is told to `onError` and tried again `everyMs` later.
   */
  prune?: {
    everyMs: number;
    clock: () => Date;
    run: (nowMs: number) => Promise<unknown>;
    onError: (error: unknown) => void;
  };
  /** The wait after an idle round, which a wake cuts short. */
  pollMs: number;
  /** The first wait after a failed round, doubled after each failure in a row up to `maxRetryMs`. */
  firstRetryMs: number;
  maxRetryMs: number;
  /**
   * Whether a wake also cuts the wait after a failure short. Without it the backoff holds however often the loop is
   * woken, and the wakes that come while it waits are forgotten: the next round looks at everything anyway.
   */
  wakeEndsRetryWait?: boolean;
}

export interface DrainLoop {
  /** There may be something new: look now rather than at the next poll. */
  wake(): void;
  /** Ends the loop once the round in flight is over. */
  stop(): Promise<void>;
}

/**
 * Runs `drain` round after round until stopped: the next at once while busy (more may be due), after `pollMs` or a
 * wake when idle, and later each time after failures in a row so that a server down is not hammered.
 */
export function drainLoop(options: DrainLoopOptions): DrainLoop {
  let stopping = false;
  let woken = false;
  let interrupt: (() => void) | null = null;
  const rest = (ms: number, wakeable: boolean) =>
    new Promise<void>((resolve) => {
      if (stopping || (wakeable && woken)) {
        woken = false;
        return resolve();
      }
      const done = () => {
        clearTimeout(timer);
        interrupt = null;
        woken = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      interrupt = wakeable ? done : () => stopping && done();
    });

  let prunedAt = 0;
  const pruneWhenDue = async () => {
    const { prune } = options;
    if (prune === undefined) return;
    try {
      const now = prune.clock().getTime();
      if (now - prunedAt < prune.everyMs) return;
      prunedAt = now;
      await prune.run(now);
    } catch (e) {
      prune.onError(e);
    }
  };

  const loop = (async () => {
    let retryMs = options.firstRetryMs;
    while (!stopping) {
      let outcome: DrainOutcome;
      try {
        outcome = await options.drain();
      } catch (e) {
        options.onDrainError(e);
        outcome = 'failed';
      }
      if (outcome === 'failed') {
        // A wake that came during the failed round must not skip the backoff: the next round would fail the same way.
        woken = false;
        await rest(retryMs, options.wakeEndsRetryWait ?? false);
        retryMs = Math.min(retryMs * 2, options.maxRetryMs);
        continue;
      }
      retryMs = options.firstRetryMs;
      if (outcome === 'idle') {
        await pruneWhenDue();
        await rest(options.pollMs, true);
      }
    }
  })();

  return {
    wake() {
      woken = true;
      interrupt?.();
    },
    async stop() {
      stopping = true;
      interrupt?.();
      await loop;
    },
  };
}
