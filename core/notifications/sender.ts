import { type DrainOutcome, drainLoop } from '../common/drain-loop.ts';
import { messageOf } from '../common/errors.ts';
import type { Logger, Mailer } from '../ports.ts';
import { composeMail, isPermanent, isPlainAddress } from './policy.ts';
import type { ClaimedGroup, MailOutboxRepo } from './ports.ts';

export interface MailSenderDeps {
  outbox: MailOutboxRepo;
  mailer: Mailer;
  /** The database's clock, as the outbox's times are. */
  clock: () => Date;
  logger: Logger;
  /** The console's public address, without the trailing '/': the links start with it. */
  consoleOrigin: string;
  newId: () => string;
}

export interface MailSenderOptions {
  /** Groups claimed at once, sent one after the other in order. */
  groups: number;
  /** Events listed in a digest; the rest are counted ("and N more"). */
  listed: number;
  /** How long a group gathers rows after its first: a burst of failures within it is one mail. */
  windowMs: number;
  /** How long a claim holds its rows: a sender that died leaves them to the others after it. */
  leaseMs: number;
  pollMs: number;
  /** The first wait after the SMTP server or the database failed, doubled each time up to `maxRetryMs`. */
  firstRetryMs: number;
  maxRetryMs: number;
}

export const DEFAULT_MAIL_SENDER_OPTIONS: MailSenderOptions = {
  groups: 20,
  listed: 20,
  windowMs: 60_000,
  leaseMs: 120_000,
  pollMs: 2000,
  firstRetryMs: 1000,
  maxRetryMs: 60_000,
};

/** How long sent rows stay in the outbox (for an operator's look), and how often they go. */
const KEPT_MS = 7 * 86_400_000;
const PRUNE_EVERY_MS = 3600_000;

export interface MailSender {
  wake(): void;
  /** Ends the loop once the mail in flight is sent or given back. */
  stop(): Promise<void>;
}

/**
 * Sends the outbox's groups, oldest first, until stopped: a group is marked sent once the SMTP server took
 * its mail. When the server cannot be reached, the claimed groups are given back and the sender waits (longer
 * each time) before it tries again from the same oldest group: nothing is lost or reordered. A mail the server
 * refuses for good (5xx, or an address that is no plain address) is given up with its reason, so that it does
 * not hold up the others for ever.
 */
export function startMailSender(deps: MailSenderDeps, options: MailSenderOptions = DEFAULT_MAIL_SENDER_OPTIONS) {
  return drainLoop({
    drain: () => sendDue(deps, options),
    onDrainError: (e) => deps.logger.warn('mail: the outbox could not be read', { reason: messageOf(e) }),
    prune: {
      everyMs: PRUNE_EVERY_MS,
      clock: deps.clock,
      run: (now) => deps.outbox.prune(new Date(now - KEPT_MS)),
      onError: (e) => deps.logger.warn('mail: old outbox rows not deleted', { reason: messageOf(e) }),
    },
    pollMs: options.pollMs,
    firstRetryMs: options.firstRetryMs,
    maxRetryMs: options.maxRetryMs,
    wakeEndsRetryWait: true,
  }) satisfies MailSender;
}

async function sendDue(deps: MailSenderDeps, options: MailSenderOptions): Promise<DrainOutcome> {
  const now = deps.clock();
  const groups = await deps.outbox.claim({
    now,
    until: new Date(now.getTime() + options.leaseMs),
    ripeBefore: new Date(now.getTime() - options.windowMs),
    groups: options.groups,
    listed: options.listed,
    newClaim: deps.newId,
  });
  if (groups.length === 0) return 'idle';
  for (const [i, group] of groups.entries()) {
    if (!isPlainAddress(group.recipient)) {
      await deps.outbox.finish(group, 'given up: the recipient is no plain address', deps.clock());
      continue;
    }
    try {
      await deps.mailer.send(composeMail(group, deps.consoleOrigin));
    } catch (e) {
      if (isPermanent(e)) {
        deps.logger.warn('mail refused, given up', { destination: group.destination, reason: messageOf(e) });
        await deps.outbox.finish(group, `given up: ${messageOf(e)}`.slice(0, 1000), deps.clock());
        continue;
      }
      // This group and the ones after it wait: the next try starts from this one, in order.
      const rest = groups.slice(i);
      await deps.outbox.release([...new Set(rest.map((g: ClaimedGroup) => g.claim))], messageOf(e));
      deps.logger.warn('mail: the SMTP server did not take it, trying again later', {
        waiting: rest.reduce((n, g) => n + g.count, 0),
        reason: messageOf(e),
      });
      return 'failed';
    }
    await deps.outbox.finish(group, 'sent', deps.clock());
  }
  return 'busy';
}
