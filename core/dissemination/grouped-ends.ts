import { coalesced } from '../common/coalesced.ts';
import type { Ports } from '../ports.ts';
import { type DeliveredAttempt, endDelivered } from './attempts.ts';
import { attemptKeyOf, renewLeases } from './claims.ts';
import type { AttemptKey } from './ports.ts';

/** Ends a delivered file's attempt; answers whether its mover still owned it. */
export type EndDelivered = (delivered: DeliveredAttempt) => Promise<boolean>;

/** The most ends one transaction writes: enough to share its round trips, few enough to keep it short. */
const MOST_ENDS_TOGETHER = 64;

/**
 * A mover's delivered files ended together (see coalesced): those that come while a transaction is
 * on its way are written by the next one, and share its round trips and its rings' locks. A failed
 * transaction fails each of its ends, for each to be tried again (see recordDelivered).
 */
export const groupedEnds = (ports: Ports): EndDelivered =>
  coalesced((delivered: DeliveredAttempt[]) => endDelivered(ports, delivered), MOST_ENDS_TOGETHER);

/** The most confirmations one statement asks for. */
const MOST_CONFIRMED_TOGETHER = 64;

/** Asks whether the mover still owns an attempt, extending its lease; answers whether it does. */
export type ConfirmAttempt = (key: AttemptKey) => Promise<boolean>;

/**
 * A mover's confirmations before a rename, asked together (see coalesced): one statement renews the
 * leases of all those that come while one is on its way, and answers each which attempts it kept.
 */
export function groupedConfirms(ports: Ports, mover: string, leaseMs: number): ConfirmAttempt {
  return coalesced(async (keys: AttemptKey[]) => {
    const kept = new Set((await renewLeases(ports, mover, leaseMs, keys)).map(attemptKeyOf));
    return keys.map((k) => kept.has(attemptKeyOf(k)));
  }, MOST_CONFIRMED_TOGETHER);
}
