import { messageOf } from '../common/errors.ts';
import type { Ports } from '../ports.ts';
import { hostOfNextAttempt } from './attempts.ts';
import { attemptKeyOf, type RunningSend, renewOrAbort } from './claims.ts';
import { groupedConfirms, groupedEnds } from './grouped-ends.ts';
import { currentHost } from './outcome.ts';
import type { DisseminationHost } from './ports.ts';
import { EDGE_MODULES } from './reach.ts';
import { claimAndSend, type SendDeps } from './send.ts';

export interface DeliverDueOptions {
  destination: string;
  /** This run's name as a mover: its claims, leases and finishes carry it. */
  mover: string;
  /** Hosts this runtime can send to; a destination whose current host is not one is left alone. */
  reaches: (host: DisseminationHost) => boolean;
  /** Transfers sent at once. */
  concurrency: number;
  leaseMs: number;
  heartbeatMs: number;
  /** No new claims after this long; what was claimed is still sent and ended. */
  budgetMs: number;
  /** Only transfers whose source a Worker reads: an http(s) URL or an R2 object (no file system to read from). */
  workerSourcesOnly: boolean;
}

export interface DeliverDueResult {
  delivered: number;
  failed: number;
  /** Taken away while sent (stopped, deleted, lease lost): someone else wrote how it ended. */
  lost: number;
  /** The budget ran out with transfers still due: worth another run soon. */
  more: boolean;
  /** Why nothing was claimed, when nothing was. */
  skipped: string | null;
}

/**
 * Delivers the due transfers of one destination, as a Node mover would, from a runtime without a
 * long-lived process (a Worker's queue consumer): the same claim (one short transaction, under the
 * destination's row lock, within maxConnections), the same leases renewed while sending, the same
 * fenced finish under the ring lock. Claims round after round until nothing is due, the ring moves
 * to a host this runtime cannot reach, or the budget is spent. Running it twice at once for the
 * same destination is harmless: the claim hands each transfer to one of them.
 */
export async function deliverDue(ports: Ports, deps: Omit<SendDeps, 'ports'>, options: DeliverDueOptions) {
  const result: DeliverDueResult = { delivered: 0, failed: 0, lost: 0, more: false, skipped: null };
  const running = new Map<string, RunningSend & { done: Promise<void> }>();
  const started = Date.now();
  const send = {
    ...deps,
    ports,
    endDelivered: groupedEnds(ports),
    confirmAttempt: groupedConfirms(ports, options.mover, options.leaseMs),
  };

  const heartbeat = setInterval(() => void beat(), options.heartbeatMs);
  async function beat() {
    try {
      await renewOrAbort(ports, options.mover, options.leaseMs, [...running.values()]);
    } catch (error) {
      ports.logger.error('edge heartbeat failed', { mover: options.mover, reason: messageOf(error) });
    }
  }

  /** Claims what it can now; false when there is nothing (more) to claim for this run. */
  async function claimRound(): Promise<boolean> {
    const filter = { destination: options.destination, workerSourcesOnly: options.workerSourcesOnly };
    const [destination] = await ports.repos.dissemination.dueDestinations(ports.clock(), 1, filter);
    if (!destination) {
      result.skipped ??= 'nothing due';
      return false;
    }
    if (Date.now() - started >= options.budgetMs) {
      result.more = true;
      return false;
    }
    const host = await hostOfNextAttempt(ports, destination);
    if (!host) {
      result.skipped ??= 'no dissemination host';
      return false;
    }
    if (!options.reaches(host)) {
      result.skipped ??= `host ${host.hostId} is not reachable here`;
      return false;
    }
    const sends = await claimAndSend(send, options.mover, destination, host, {
      leaseMs: options.leaseMs,
      wanted: options.concurrency - running.size,
      workerSourcesOnly: options.workerSourcesOnly,
    });
    if (sends.length === 0) {
      result.skipped ??= 'nothing claimable now';
      return false;
    }
    for (const send of sends) {
      const key = attemptKeyOf(send.key);
      const done = send.ended.then((how) => {
        running.delete(key);
        result[how]++;
      });
      // The send itself, not a copy: the beat renews it, and the send judges its lease by it.
      running.set(key, Object.assign(send, { done }));
    }
    result.skipped = null;
    return true;
  }

  try {
    let claiming = true;
    while (claiming || running.size > 0) {
      if (claiming && running.size < options.concurrency) claiming = await claimRound();
      // Slots are full, or nothing more was claimed: wait for a send to end before looking again.
      if (running.size > 0 && (!claiming || running.size >= options.concurrency)) {
        await Promise.race([...running.values()].map((r) => r.done));
        // A slot freed up after a round that claimed nothing (connections full): look once more.
        if (!claiming && result.skipped === 'nothing claimable now') claiming = true;
      }
    }
  } finally {
    clearInterval(heartbeat);
  }
  return result;
}

/**
 * Due destinations whose current host this runtime reaches, with a due transfer it can read:
 * what a Worker's cron hands to its queue. Those waiting longest first, as the movers take them.
 */
export async function reachableDue(ports: Ports, reaches: (host: DisseminationHost) => boolean, limit: number) {
  const now = ports.clock();
  // Narrowed in the database first, so that destinations only Node movers can serve never crowd the
  // edge's out of the limit; the ring's current host is then checked here.
  const due = await ports.repos.dissemination.dueDestinations(now, limit, {
    workerSourcesOnly: true,
    modules: EDGE_MODULES,
  });
  return due
    .filter((destination) => {
      const { host } = currentHost(destination, destination.state, now.getTime());
      return host !== null && reaches(host);
    })
    .map((destination) => destination.name);
}
