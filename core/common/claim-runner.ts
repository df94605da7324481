export interface ClaimRunnerOptions<T, K> {
  /** Items under way at once here. */
  concurrency: number;
  /** Claims again this often when nothing ends sooner. */
  pollMs: number;
  /** Claims at most `free` items. */
  claim(free: number): Promise<readonly T[]>;
  /** Two items with one key are never under way at once. */
  keyOf(item: T): K;
  /** Works an item; `controller` is its own, aborted on stop. */
  run(item: T, controller: AbortController): Promise<void>;
  onClaimError(error: unknown): void;
}

export interface ClaimRunner<K> {
  /** Claims now rather than at the next poll. */
  wake(): void;
  inFlight(): number;
  /** Whether `stop` was called: a run ending now may have been cut by it. */
  stopping(): boolean;
  running(): ReadonlyMap<K, { readonly controller: AbortController }>;
  /** Stops claiming, aborts the runs under way (each with its own `reason()`) and waits for them. */
  stop(reason: () => unknown): Promise<void>;
}

/**
 * Claims items and works them, a few at once: it claims again when one ends or every `pollMs`, so
 * a slot freed is filled without waiting for the poll. A failed claim is reported and retried later.
 */
export function startClaimRunner<T, K>(options: ClaimRunnerOptions<T, K>): ClaimRunner<K> {
  const running = new Map<K, { controller: AbortController; done: Promise<void> }>();
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let wakeUp: (() => void) | null = null;

  const loop = (async () => {
    while (!stopping) {
      try {
        const free = options.concurrency - running.size;
        if (free > 0) {
          for (const item of await options.claim(free)) start(item);
        }
      } catch (error) {
        options.onClaimError(error);
      }
      if (!stopping) await new Promise<void>((resolve) => idle(resolve));
    }
  })();

  function idle(resolve: () => void) {
    wakeUp = () => {
      if (timer) clearTimeout(timer);
      timer = null;
      wakeUp = null;
      resolve();
    };
    timer = setTimeout(wakeUp, options.pollMs);
  }

  function start(item: T) {
    const key = options.keyOf(item);
    const controller = new AbortController();
    const done = options.run(item, controller).finally(() => {
      running.delete(key);
      wakeUp?.();
    });
    running.set(key, { controller, done });
  }

  return {
    wake: () => wakeUp?.(),
    inFlight: () => running.size,
    stopping: () => stopping,
    running: () => running,
    async stop(reason) {
      stopping = true;
      wakeUp?.();
      await loop;
      for (const run of running.values()) run.controller.abort(reason());
      await Promise.all([...running.values()].map((r) => r.done));
    },
  };
}
