import type { Ports } from '../ports.ts';
import { LeaseLapsed, TakenAway } from './abort-reasons.ts';
import { freeSlots } from './capacity.ts';
import { showClaimed } from './destination-status.ts';
import type { AttemptKey, AttemptOutcome, ClaimedTransfer } from './ports.ts';
import { AT_LIMIT_BATCH, requeueAtStartLimit } from './requeue-at-limit.ts';
import { startLimit } from './start-limits.ts';

export interface ClaimRequest {
  destination: string;
  hostId: string;
  mover: string;
  destinationMax: number | null;
  hostMax: number | null;
  leaseMs: number;
  /** At most this many for this mover now (its own concurrency left). */
  wanted: number;
  /** Only transfers whose source a Worker reads (an http(s) URL, an R2 object): a Worker's claims. */
  workerSourcesOnly?: boolean;
  /**
   * Whether the destination's shown status changes with the claim (to sending): when the mover was
   * sending nothing to it before (the default); the end of each attempt shows it again anyway.
   */
  showSending?: boolean;
}

/**
 * Claims due transfers of one destination for a mover, in one short transaction: whoever holds the
 * destination's row decides alone, so the counts it reads stay true until it commits and neither
 * the destination's nor the host's maxConnections is ever exceeded, across any number of movers.
 * The host's count includes the sessions other movers keep open to it (see `running`).
 */
export function claimTransfers(ports: Ports, request: ClaimRequest): Promise<ClaimedTransfer[]> {
  const now = ports.clock();
  return ports.repos.transaction(async (repos) => {
    // The destination's row, then the host's lock: every claim takes the two in the same order.
    const limits = await repos.dissemination.lockForClaim(request.destination, request.hostId);
    if (!limits) return [];
    const limit = startLimit(limits);
    const atStartLimit = limit === null ? undefined : { startLimit: limit, limit: AT_LIMIT_BATCH };
    const running = await repos.dissemination.running(
      request.destination,
      request.hostId,
      request.mover,
      now,
      atStartLimit,
    );
    const free = freeSlots({
      destinationMax: request.destinationMax,
      destinationRunning: running.destination,
      hostMax: request.hostMax,
      hostRunning: running.host,
    });
    const wanted = Math.min(free, request.wanted);
    if (wanted <= 0) return [];
    await requeueAtStartLimit(repos, request.destination, limits, running.atStartLimit, now);
    const claimed = await repos.dissemination.takeDue({
      destination: request.destination,
      hostId: request.hostId,
      mover: request.mover,
      limit: wanted,
      now,
      leaseUntil: new Date(now.getTime() + request.leaseMs),
      workerSourcesOnly: request.workerSourcesOnly,
      startBelow: limit ?? undefined,
    });
    if (claimed.length > 0 && request.showSending !== false) {
      await showClaimed(repos.dissemination, request.destination, now);
    }
    return claimed;
  });
}

/** Ends an attempt; a mover that lost it (lease reclaimed, transfer stopped) changes nothing. */
export function finishAttempt(ports: Ports, mover: string, claimed: ClaimedTransfer, outcome: AttemptOutcome) {
  return ports.repos.dissemination.finish({
    id: claimed.id,
    mover,
    attempt: claimed.attempt,
    now: ports.clock(),
    outcome,
  });
}

/** The mover's heartbeat: its leases extended; an attempt missing from the answer is to be aborted. */
export function renewLeases(ports: Ports, mover: string, leaseMs: number, attempts: readonly AttemptKey[]) {
  if (attempts.length === 0) return Promise.resolve([]);
  const leaseUntil = new Date(ports.clock().getTime() + leaseMs);
  return ports.repos.dissemination.renewLeases({ mover, leaseUntil, attempts });
}

/** A send a mover is running, by attempt: a transfer's next attempt is another send. */
export interface RunningSend {
  key: AttemptKey;
  controller: AbortController;
  /** When its lease was last extended, on this process's monotonic clock (ms). */
  renewedAt: number;
}

export const attemptKeyOf = (key: AttemptKey) => `${key.id}/${key.attempt}`;

/**
 * A mover's beat over the sends running when it starts (one claimed while the renewal is on its
 * way would otherwise look taken away): first the sends whose lease may have lapsed meanwhile stop
 * (the renewals failed, or the process was paused: another mover may be sending them now), then
 * the leases of the others are renewed, and those taken away are aborted.
 */
export async function renewOrAbort(ports: Ports, mover: string, leaseMs: number, sending: readonly RunningSend[]) {
  const alive = sending.filter((s) => !stopIfLapsing(s, leaseMs, mover));
  const startedAt = performance.now();
  const renewed = await renewLeases(
    ports,
    mover,
    leaseMs,
    alive.map((s) => s.key),
  );
  const kept = new Set(renewed.map(attemptKeyOf));
  for (const send of alive) {
    if (kept.has(attemptKeyOf(send.key))) send.renewedAt = startedAt;
    else send.controller.abort(new TakenAway(`Transfer ${send.key.id} was taken away from ${mover}`));
  }
}

/**
 * A send stops on its own once three quarters of its lease have passed without a renewal: the rest
 * is the margin for it to stop before another mover may take the transfer over. Its lease is judged
 * from when its last renewal was asked for, so a slow answer only makes the margin larger. A process
 * resumed after a pause runs its due timers, the beat's among them, before it handles the I/O that
 * waited: the send stops, and its method drops what its connection still held, before that goes out.
 */
function stopIfLapsing(send: RunningSend, leaseMs: number, mover: string) {
  if (!isLapsing(send, leaseMs)) return false;
  send.controller.abort(lapsed(send.key, mover));
  return true;
}

/** Whether three quarters of the send's lease have passed since its last renewal was asked for. */
export const isLapsing = (send: RunningSend, leaseMs: number) =>
  performance.now() - send.renewedAt >= (leaseMs * 3) / 4;

export const lapsed = (key: AttemptKey, mover: string) =>
  new LeaseLapsed(`Transfer ${key.id}: the lease of ${mover} could not be renewed in time`);

/** How many destinations whose due time passed with nothing due one beat settles at most. */
const SETTLED_PER_BEAT = 500;

/**
 * Raises the due time of destinations that have nothing due any more (all claimed, held,
 * expired...): the movers' look walks past each of them until then.
 */
export async function settleStaleDestinations(ports: Ports) {
  const now = ports.clock();
  const stale = await ports.repos.dissemination.staleInDueQueue(now, SETTLED_PER_BEAT);
  await ports.repos.dissemination.settleDueQueue(stale, now);
  return stale.length;
}

/** Gives back the transfers of movers that stopped renewing their leases. */
export function reclaimLapsedAttempts(ports: Ports) {
  return ports.repos.dissemination.reclaimLapsed(ports.clock());
}
