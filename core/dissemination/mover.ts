import { messageOf } from '../common/errors.ts';
import type { Ports } from '../ports.ts';
import { MoverStopping } from './abort-reasons.ts';
import { hostOfNextAttempt } from './attempts.ts';
import {
  attemptKeyOf,
  type RunningSend,
  reclaimLapsedAttempts,
  renewOrAbort,
  settleStaleDestinations,
} from './claims.ts';
import type { FilterCodecs } from './filters.ts';
import { groupedConfirms, groupedEnds } from './grouped-ends.ts';
import { hostSessionLedger } from './host-sessions.ts';
import { isMethodName } from './method-options.ts';
import type { TransferMethods } from './methods.ts';
import type { DisseminationHost } from './ports.ts';
import { claimAndSend, type SourceReader } from './send.ts';
import type { Spool } from './spooled-filter.ts';
import type { EngineStats } from './stats.ts';

export type { SourceReader };

/**
 * Whether this mover should claim for the host: it has the host's method, or no mover has it (a
 * host without a method, or an unknown one, fails wherever it is tried, as the operator must see).
 */
export const canSend = (methods: TransferMethods, host: DisseminationHost) =>
  !isMethodName(host.module) || methods[host.module] !== undefined;

export interface MoverOptions {
  name: string;
  /** Transfers this mover sends at once, over every destination. */
  concurrency: number;
  /** How long a claimed transfer stays this mover's without a heartbeat. */
  leaseMs: number;
  /** Renews the leases, aborts what was taken away, reclaims lapsed ones. */
  heartbeatMs: number;
  /** Looks for due work at least this often, even without a wake-up. */
  pollMs: number;
}

export interface MoverDeps {
  ports: Ports;
  methods: TransferMethods;
  sources: SourceReader;
  /** The compressors of hosts' `filterName` (see SendDeps). */
  filters?: FilterCodecs;
  /** Where a filter's output waits for its size (see SendDeps). */
  spool?: Spool;
  /** Counters for /metrics. */
  stats?: EngineStats;
  /** Called after each beat, for work that rides on it (the expiry sweep). */
  onHeartbeat?: () => Promise<void>;
}

export interface Mover {
  /** Looks for work now (a put, a requeue, a started destination). */
  wake(): void;
  /** Transfers being sent now. */
  inFlight(): number;
  /**
   * Stops claiming and lets the transfers in flight finish; after `deadlineMs` the rest are
   * aborted and requeued at once. Resolves once every attempt has ended and sessions are closed.
   */
  stop(deadlineMs: number): Promise<void>;
}

/**
 * A data mover: claims due transfers destination by destination (each claim one short
 * transaction), sends each through its host's transfer method with no transaction open, and
 * ends each attempt under the destination's ring lock. Its heartbeat renews its leases; a
 * transfer missing from the renewal was stopped, deleted or reclaimed, and its stream is closed.
 */
export function startMover(deps: MoverDeps, options: MoverOptions): Mover {
  const { ports } = deps;
  const sessions = hostSessionLedger(ports, options.name, options.leaseMs);
  const sending = {
    ...deps,
    sessions,
    endDelivered: groupedEnds(ports),
    confirmAttempt: groupedConfirms(ports, options.name, options.leaseMs),
  };
  const running = new Map<string, RunningSend>();
  let stopping = false;
  let wakeUp: (() => void) | null = null;
  let pending = false;
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

  const heartbeat = setInterval(() => void beat(), options.heartbeatMs);
  heartbeat.unref?.();
  // Said at once, not a heartbeat later: a mover that cannot reach its database from the start is seen missing.
  void announce();
  async function announce() {
    try {
      await ports.repos.dissemination.moverBeat(options.name, options.heartbeatMs);
    } catch (error) {
      ports.logger.error('mover heartbeat failed', { mover: options.name, reason: messageOf(error) });
    }
  }
  async function beat() {
    try {
      await renewOrAbort(ports, options.name, options.leaseMs, [...running.values()]);
      await sessions.renew();
      // After the leases: what keeps the sends' guarantees goes first.
      await ports.repos.dissemination.moverBeat(options.name, options.heartbeatMs);
      const reclaimed = await reclaimLapsedAttempts(ports);
      if (reclaimed > 0) {
        deps.stats?.reclaimed(reclaimed);
        wake();
      }
      await settleStaleDestinations(ports);
      await deps.onHeartbeat?.();
    } catch (error) {
      ports.logger.error('mover heartbeat failed', {
        mover: options.name,
        reason: messageOf(error),
      });
    }
  }

  const loop = (async () => {
    while (!stopping) {
      pending = false;
      try {
        await claimRound();
      } catch (error) {
        ports.logger.error('mover claim failed', {
          mover: options.name,
          reason: messageOf(error),
        });
      }
      if (!stopping) await idle();
    }
  })();

  /** This mover's sends in progress, by destination. */
  const sendingTo = new Map<string, number>();

  async function claimRound() {
    let free = options.concurrency - running.size;
    if (free <= 0) return;
    const due = await ports.repos.dissemination.dueDestinations(ports.clock(), Math.max(10, free));
    for (const destination of due) {
      if (free <= 0 || stopping) break;
      const host = await hostOfNextAttempt(ports, destination);
      // A host whose method this mover lacks is left to a mover that has it (an R2 host to the edge):
      // claiming it here would fail it and spend its tries.
      if (!host || !canSend(deps.methods, host)) continue;
      const name = destination.name;
      const sends = await claimAndSend(sending, options.name, destination, host, {
        leaseMs: options.leaseMs,
        wanted: free,
        firstSends: !sendingTo.has(name),
      });
      for (const send of sends) {
        free--;
        const key = attemptKeyOf(send.key);
        running.set(key, send);
        sendingTo.set(name, (sendingTo.get(name) ?? 0) + 1);
        void send.ended.finally(() => {
          running.delete(key);
          const left = (sendingTo.get(name) ?? 1) - 1;
          if (left > 0) sendingTo.set(name, left);
          else sendingTo.delete(name);
          wake();
        });
      }
    }
  }

  return {
    wake,
    inFlight: () => running.size,
    async stop(deadlineMs) {
      stopping = true;
      wakeUp?.();
      await loop;
      const deadline = setTimeout(() => {
        for (const { controller } of running.values()) {
          controller.abort(new MoverStopping(`Interrupted: DataMover=${options.name} stopped`));
        }
      }, deadlineMs);
      while (running.size > 0) await new Promise((resolve) => setTimeout(resolve, 50));
      clearTimeout(deadline);
      clearInterval(heartbeat);
      await Promise.all(Object.values(deps.methods).map((m) => m?.close()));
      await sessions.settle();
      await ports.repos.dissemination.moverStopped(options.name).catch((error: unknown) => {
        ports.logger.error('mover stop not recorded', { mover: options.name, reason: messageOf(error) });
      });
    },
  };
}
