import { messageOf } from '../common/errors.ts';
import type { Ports } from '../ports.ts';
import type { SessionLedger } from './methods.ts';

export interface HostSessionLedger extends SessionLedger {
  /** The heartbeat's part: the lease of what was published extended, and a write that failed made again. */
  renew(): Promise<void>;
  /** Waits for the writes under way, then writes the counts once more if they changed (a stop). */
  settle(): Promise<void>;
  /** Sessions held open to the host now, as counted here. */
  held(hostId: string): number;
}

/**
 * The sessions one mover holds open per host, published in host_sessions for the other movers'
 * claims. A new session is counted there before it is opened; a closed one is written off after it
 * closed; in between the table never shows fewer than are open. Writes run one at a time, each
 * writing every host's count as it is when the write starts, so a later write is never older than
 * an earlier one; a session reused writes nothing. Idle sessions are kept no longer than
 * three quarters of the lease last written: a mover that cannot renew it closes them before the
 * other movers stop counting them.
 */
export function hostSessionLedger(ports: Ports, mover: string, leaseMs: number): HostSessionLedger {
  const held = new Map<string, number>();
  /** Counts changed since the last write that succeeded started. */
  let stale = false;
  /** When the last write that succeeded started: its lease runs from no earlier than that. */
  let confirmedAt = Number.NEGATIVE_INFINITY;
  let writing: Promise<void> = Promise.resolve();
  let queued: Promise<void> | null = null;

  /** A write that starts after this call, so that it carries every change made before it. */
  function publish(): Promise<void> {
    if (queued) return queued;
    const run = writing.then(write);
    queued = run;
    writing = run.catch(() => undefined);
    return run;
  }

  async function write() {
    queued = null;
    const startedAt = performance.now();
    stale = false;
    const counts = [...held].map(([hostId, sessions]) => ({ hostId, sessions }));
    try {
      const leaseUntil = new Date(ports.clock().getTime() + leaseMs);
      await ports.repos.dissemination.publishSessions({ mover, held: counts, leaseUntil });
      confirmedAt = startedAt;
    } catch (error) {
      stale = true;
      throw error;
    }
  }

  const release = (hostId: string) => {
    const left = (held.get(hostId) ?? 0) - 1;
    if (left > 0) held.set(hostId, left);
    else held.delete(hostId);
    stale = true;
  };

  return {
    async opening(hostId) {
      held.set(hostId, (held.get(hostId) ?? 0) + 1);
      stale = true;
      try {
        await publish();
      } catch (error) {
        release(hostId);
        throw new Error(`Cannot record a new session to host ${hostId}: ${messageOf(error)}`);
      }
    },
    closed(hostId) {
      release(hostId);
      // Until written, other movers count one session more than there is: late is safe. A write
      // that fails is made again by the next heartbeat.
      publish().catch((error: unknown) =>
        ports.logger.warn('could not write off a closed session', { mover, host: hostId, reason: messageOf(error) }),
      );
    },
    idleAllowanceMs: () => confirmedAt + (leaseMs * 3) / 4 - performance.now(),
    async renew() {
      if (held.size > 0 || stale) await publish();
    },
    async settle() {
      await writing;
      if (stale) await publish().catch(() => undefined);
    },
    held: (hostId) => held.get(hostId) ?? 0,
  };
}
