import { errEvent, uphEvent } from '../common/events.ts';
import type { Ports } from '../ports.ts';
import { afterFailure, afterSuccess, beforeAttempt, DEFAULTS, type FailoverState } from './failover.ts';
import type { ClaimedTransfer, DisseminationHost, DueDestination, StoredFailover } from './ports.ts';

/** One attempt as a mover runs it: the transfer it was given, through which host of which destination. */
export interface Attempt {
  mover: string;
  transfer: ClaimedTransfer;
  destination: DueDestination;
  host: DisseminationHost;
  /** The transfer method's module, as the ERR and UPH lines name it. */
  protocol: string;
}

/** The ring as it stands now: back on the primary once `resetFrequency` has passed away from it. */
export function currentHost(destination: DueDestination, state: FailoverState, now: number) {
  const ready = beforeAttempt(state, destination.retry, now);
  const hostIndex = destination.hosts.length === 0 ? 0 : ready.hostIndex % destination.hosts.length;
  return {
    state: { ...ready, hostIndex },
    host: destination.hosts[hostIndex] ?? null,
  };
}

/**
 * The host the next attempt of a due destination goes to; a started destination without any
 * dissemination host is set to FAIL (the reference's NoHosts), and null is answered.
 */
export async function hostOfNextAttempt(ports: Ports, destination: DueDestination) {
  const { host } = currentHost(destination, destination.state, ports.clock().getTime());
  if (host) return host;
  await ports.repos.dissemination.failDestination(destination.name);
  ports.logger.warn('destination has no dissemination host', { destination: destination.name });
  return null;
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

/**
 * Runs `work` in one transaction under the destination's ring lock. `work` answers false when the
 * mover no longer owned the attempt: its finish wrote nothing but the attempt's release (an operator
 * changed the transfer meanwhile), and it writes nothing after it, so the transaction commits that
 * release while the ring and the transfer's status stay as they are.
 */
function underRing(
  ports: Ports,
  destination: string,
  work: (repos: Ports['repos'], failover: StoredFailover) => Promise<boolean>,
): Promise<boolean> {
  return ports.repos.transaction(async (repos) => work(repos, await repos.dissemination.lockFailover(destination)));
}

/** A delivered file: DONE with its history, the ring told the host works, and a UPH line. */
export async function endDelivered(ports: Ports, attempt: Attempt, delivered: { sent: number; md5: string }) {
  const now = ports.clock();
  const { transfer, destination, host } = attempt;
  const seconds = Math.max(1, now.getTime() - transfer.startedAt.getTime()) / 1000;
  const mbits = ((delivered.sent * 8) / seconds / 1e6).toFixed(2);
  const comment =
    `Sent ${delivered.sent} bytes from DataMover=${attempt.mover} to ${host.host} ` +
    `at ${transfer.target} (${mbits} Mbits/s)`;
  const owned = await underRing(ports, destination.name, async (repos, failover) => {
    const ended = await repos.dissemination.finish({
      id: transfer.id,
      mover: attempt.mover,
      attempt: transfer.attempt,
      now,
      outcome: {
        status: 'DONE',
        sent: delivered.sent,
        md5: delivered.md5,
        comment,
      },
    });
    if (!ended) return false;
    const used = Math.max(0, destination.hosts.indexOf(host));
    const state = afterSuccess({ ...failover.state, hostIndex: used }, destination.retry);
    await repos.dissemination.saveFailover(
      destination.name,
      { state, pausedUntil: null, pauseReason: null },
      { at: now, hostId: host.hostId, error: null },
    );
    await repos.dissemination.refreshSchedulerStatus(destination.name, now);
    return true;
  });
  if (owned) {
    ports.events.write(
      uphEvent({
        ...lineFields(attempt, now),
        priority: transfer.priority,
        queueTime: transfer.queueAt,
        finishTime: now,
        bytesSent: delivered.sent,
      }),
    );
  }
  return owned;
}

/**
 * A failed attempt: RETR under the reference's host rules (a try spent on the host and its retry
 * frequency waited, else the next host at once; a full round puts the destination to sleep or, its
 * rounds spent, on HOLD), history STOP then RETR, and an ERR line. `counts` is false for a failure
 * that says nothing about the host (the mover stopping): the transfer is requeued at once.
 */
export async function endFailed(
  ports: Ports,
  attempt: Attempt,
  failure: { message: string; sent: number; counts: boolean },
  random: () => number = Math.random,
) {
  const now = ports.clock();
  const { transfer, destination, host } = attempt;
  let held = false;
  const owned = await underRing(ports, destination.name, async (repos, stored) => {
    const { state, host: current } = currentHost(destination, stored.state, now.getTime());
    let next: StoredFailover = stored;
    let queueAt = now;
    let requeueComment = `Requeued by the scheduler after a transfer failure on DataMover=${attempt.mover}`;
    // A failure on a host the ring has already left (another attempt moved it on) spends nothing.
    if (failure.counts && current?.hostId === host.hostId) {
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
        held = true;
        next = { state: outcome.state, pausedUntil: null, pauseReason: null };
        requeueComment = 'Requeued: every host failed, the destination is on HOLD';
      } else if (outcome.kind === 'sleep') {
        queueAt = new Date(outcome.retryAt);
        next = {
          state: outcome.state,
          pausedUntil: queueAt,
          pauseReason: 'sleep',
        };
        requeueComment += ` (every host failed: sleeping until ${queueAt.toISOString()})`;
      } else {
        queueAt = new Date(outcome.retryAt);
        const sticks = outcome.reason === 'stick to host';
        next = {
          state: outcome.state,
          pausedUntil: sticks ? queueAt : null,
          pauseReason: sticks ? 'retry' : null,
        };
        if (!sticks) requeueComment += ' (moving to the next host)';
      }
    } else if (!failure.counts) {
      requeueComment = `Requeued by the scheduler: DataMover=${attempt.mover} stopped`;
    }
    const ended = await repos.dissemination.finish({
      id: transfer.id,
      mover: attempt.mover,
      attempt: transfer.attempt,
      now,
      outcome: {
        status: 'RETR',
        sent: failure.sent,
        queueAt,
        message: failure.message,
        requeueComment,
      },
    });
    if (!ended) return false;
    await repos.dissemination.saveFailover(destination.name, next, {
      at: now,
      hostId: host.hostId,
      error: failure.message,
    });
    if (held) await repos.dissemination.holdDestination(destination.name);
    else await repos.dissemination.refreshSchedulerStatus(destination.name, now);
    return true;
  });
  if (owned) {
    ports.events.write(
      errEvent({
        ...lineFields(attempt, now),
        duration: now.getTime() - transfer.startedAt.getTime(),
        userId: host.login,
        bytesSent: failure.sent,
        message: failure.message,
      }),
    );
    if (held)
      ports.logger.warn('destination on HOLD: every host failed', {
        destination: destination.name,
      });
  }
  return owned;
}
