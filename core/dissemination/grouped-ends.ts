import type { Ports } from '../ports.ts';
import { type DeliveredAttempt, endDelivered } from './attempts.ts';

/** Ends a delivered file's attempt; answers whether its mover still owned it. */
export type EndDelivered = (delivered: DeliveredAttempt) => Promise<boolean>;

/** The most ends one transaction writes: enough to share its round trips, few enough to keep it short. */
const MOST_ENDS_TOGETHER = 64;

/**
 * A mover's delivered files ended together: an end that finds none being written is written at
 * once, alone; those that come while a transaction is on its way are written by the next one, all
 * together. A mover that sends one file at a time waits for nothing more than before, and one that
 * sends many shares each transaction's round trips and its ring's lock among them. A failed
 * transaction fails each of its ends, for each to be tried again (see recordDelivered).
 */
export function groupedEnds(ports: Ports): EndDelivered {
  let waiting: Array<{ delivered: DeliveredAttempt; settle: (owned: Promise<boolean>) => void }> = [];
  let writing = false;

  async function writeWaiting() {
    writing = true;
    while (waiting.length > 0) {
      const group = waiting.slice(0, MOST_ENDS_TOGETHER);
      waiting = waiting.slice(group.length);
      const ended = endDelivered(
        ports,
        group.map((g) => g.delivered),
      );
      for (const [i, g] of group.entries()) g.settle(ended.then((owned) => owned[i] ?? false));
      await ended.catch(() => undefined);
    }
    writing = false;
  }

  return (delivered) =>
    new Promise<boolean>((resolve, reject) => {
      waiting.push({ delivered, settle: (owned) => owned.then(resolve, reject) });
      if (!writing) void writeWaiting();
    });
}
