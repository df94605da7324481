import { errEvent, uphEvent } from '../common/events.ts';
import { afterFailure, afterSuccess, beforeAttempt, DEFAULTS } from './failover.ts';
import type {
  AttemptOutcome,
  ClaimedTransfer,
  DeliveredFilter,
  DisseminationHost,
  DueDestination,
  StoredFailover,
} from './ports.ts';

/** One attempt as a mover runs it: the transfer it was given, through which host of which destination. */
export interface Attempt {
  mover: string;
  transfer: ClaimedTransfer;
  destination: DueDestination;
  host: DisseminationHost;
  /** The transfer method's module, as the ERR and UPH lines name it. */
  protocol: string;
}

/**
 * How a send ended. `counts` is false for a failure that says nothing about the host (the mover
 * stopping, the attempt taken away): the transfer is requeued at once and the ring stays.
 */
export type SendResult =
  | { kind: 'delivered'; sent: number; md5: string | null; filter?: DeliveredFilter }
  | { kind: 'failed'; message: string; sent: number; counts: boolean };

/** Everything an ended attempt writes, decided before anything is: recorded in one transaction. */
export interface OutcomeDecision {
  transfer: AttemptOutcome;
  ring: StoredFailover;
  /** The ring's note of this attempt: the host it used and its error (null for a success). */
  ringNote: { hostId: string; error: string | null };
  /** Every host failed its rounds: the destination goes on HOLD for an operator to restart. */
  holdDestination: boolean;
  /** The UPH or ERR line, written once the transaction committed. */
  eventLine: string;
}

/** The ring as it stands now: back on the primary once `resetFrequency` has passed away from it. */
export function currentHost(destination: DueDestination, state: StoredFailover['state'], now: number) {
  const ready = beforeAttempt(state, destination.retry, now);
  const hostIndex = destination.hosts.length === 0 ? 0 : ready.hostIndex % destination.hosts.length;
  return {
    state: { ...ready, hostIndex },
    host: destination.hosts[hostIndex] ?? null,
  };
}

/**
 * A delivered file's outcome, which needs no read of the ring: DONE with its history comment and
 * UPH line, and the ring told the host works (afterSuccess, written as one update: the host used,
 * nothing failed, back on the primary, or still away from it since when it left).
 */
export function deliveredOutcome(attempt: Attempt, result: Extract<SendResult, { kind: 'delivered' }>, now: Date) {
  const { transfer, destination, host, mover } = attempt;
  const seconds = Math.max(1, now.getTime() - transfer.startedAt.getTime()) / 1000;
  const mbits = ((result.sent * 8) / seconds / 1e6).toFixed(2);
  const used = Math.max(0, destination.hosts.indexOf(host));
  const backToPrimary = destination.retry.onHostFailure === 1;
  return {
    transfer: {
      status: 'DONE' as const,
      sent: result.sent,
      md5: result.md5,
      filter: result.filter ?? null,
      comment: `Sent ${result.sent} bytes from DataMover=${mover} to ${host.host} at ${transfer.target} (${mbits} Mbits/s)`,
    },
    success: { hostIndex: backToPrimary ? 0 : used, awayFromPrimary: !backToPrimary && used !== 0 },
    eventLine: uphEvent({
      ...lineFields(attempt, now),
      priority: transfer.priority,
      queueTime: transfer.queueAt,
      finishTime: now,
      bytesSent: result.sent,
    }),
  };
}

/**
 * The outcome of an attempt, from the ring as the destination's lock holder read it: a delivered
 * file is DONE and the ring is told the host works; a failure is RETR (history STOP then RETR, as
 * the reference writes it) under the reference's host rules: a try spent on the host and its retry
 * frequency waited, else the next host at once; a full round puts the destination to sleep or, its
 * rounds spent, on HOLD. A failure on a host the ring has already left (another attempt moved it
 * on) spends nothing.
 */
export function decideOutcome(
  attempt: Attempt,
  result: SendResult,
  stored: StoredFailover,
  now: Date,
  random: () => number = Math.random,
): OutcomeDecision {
  if (result.kind === 'delivered') {
    const delivered = deliveredOutcome(attempt, result, now);
    const used = delivered.success.hostIndex;
    return {
      ...delivered,
      ring: {
        state: afterSuccess({ ...stored.state, hostIndex: used }, attempt.destination.retry),
        pausedUntil: null,
        pauseReason: null,
      },
      ringNote: { hostId: attempt.host.hostId, error: null },
      holdDestination: false,
    };
  }
  const { transfer, host } = attempt;
  const line = lineFields(attempt, now);
  const requeue = afterFailedAttempt(attempt, result.counts, stored, now, random);
  return {
    transfer: {
      status: 'RETR',
      sent: result.sent,
      queueAt: requeue.queueAt,
      message: result.message,
      requeueComment: requeue.comment,
    },
    ring: requeue.ring,
    ringNote: { hostId: host.hostId, error: result.message },
    holdDestination: requeue.hold,
    eventLine: errEvent({
      ...line,
      duration: now.getTime() - transfer.startedAt.getTime(),
      userId: host.login,
      bytesSent: result.sent,
      message: result.message,
    }),
  };
}

function afterFailedAttempt(
  { destination, host, mover }: Attempt,
  counts: boolean,
  stored: StoredFailover,
  now: Date,
  random: () => number,
) {
  const requeued = `Requeued by the scheduler after a transfer failure on DataMover=${mover}`;
  const unchanged = { ring: stored, queueAt: now, hold: false };
  if (!counts) return { ...unchanged, comment: `Requeued by the scheduler: DataMover=${mover} stopped` };
  const { state, host: current } = currentHost(destination, stored.state, now.getTime());
  if (current?.hostId !== host.hostId) return { ...unchanged, comment: requeued };
  const outcome = afterFailure(
    state,
    destination.hosts.length,
    {
      retryCount: host.retryCount ?? DEFAULTS.hostRetryCount,
      retryFrequency: host.retryFrequency ?? DEFAULTS.hostRetryFrequency,
    },
    destination.retry,
    now.getTime(),
    random,
  );
  if (outcome.kind === 'hold') {
    return {
      ring: { state: outcome.state, pausedUntil: null, pauseReason: null },
      queueAt: now,
      hold: true,
      comment: 'Requeued: every host failed, the destination is on HOLD',
    };
  }
  const queueAt = new Date(outcome.retryAt);
  if (outcome.kind === 'sleep') {
    return {
      ring: { state: outcome.state, pausedUntil: queueAt, pauseReason: 'sleep' as const },
      queueAt,
      hold: false,
      comment: `${requeued} (every host failed: sleeping until ${queueAt.toISOString()})`,
    };
  }
  const sticks = outcome.reason === 'stick to host';
  return {
    ring: {
      state: outcome.state,
      pausedUntil: sticks ? queueAt : null,
      pauseReason: sticks ? ('retry' as const) : null,
    },
    queueAt,
    hold: false,
    comment: sticks ? requeued : `${requeued} (moving to the next host)`,
  };
}

/** What the UPH and ERR lines of an attempt share. */
const lineFields = ({ transfer, destination, host, protocol, mover }: Attempt, now: Date) => ({
  at: now,
  transferId: transfer.id,
  destination: destination.name,
  destinationType: destination.typeLabel,
  fileName: transfer.target,
  fileSize: transfer.size,
  scheduledTime: transfer.scheduledAt,
  startTime: transfer.startedAt,
  protocol,
  mover,
  hostAddress: host.host,
  networkCode: host.network,
});
