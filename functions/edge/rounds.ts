import { messageOf } from '../../core/common/errors.ts';
import { sweep } from '../../core/retention/sweep.ts';
import type { CallContext, FetchShell } from '../fetch-shell.ts';
import {
  consumeDeliveries,
  type DeliveryMessage,
  type DeliveryQueue,
  dispatchDue,
  type EdgeSending,
} from './deliveries.ts';
import { retrieveDue } from './retrieval.ts';

/**
 * The edge mover's scheduled round, whatever drives it (Workers Cron, Deno.cron, EventBridge on
 * Lambda, a timer on Node and Bun): the expiry sweep and purge, then (with a store) retrievals of the
 * files put since, then the due destinations the edge can reach, sent to the delivery queue: a file
 * retrieved here goes out in the same round. One failing does not keep the others from running.
 */
export function scheduledRound(shell: FetchShell, sending: EdgeSending, call: CallContext): Promise<void> {
  const { config, store, logger } = shell;
  return shell.run(call, async (scope) => {
    await scope.measureClock();
    const retention = {
      maxTransferLifeDays: config.ECPDS_MAX_TRANSFER_LIFE_DAYS,
      maxIdentityCount: config.ECPDS_MAX_IDENTITY_COUNT,
      batchSize: config.ECPDS_PURGE_BATCH,
    };
    await sweep(scope.ports(), retention).catch((e) => logger.error('expiry sweep failed', { reason: messageOf(e) }));
    if (store) await retrieveDue(scope.ports(), config, sending.sources, store);
    if (sending.queue) await dispatchDue(scope.ports(), config, sending.queue);
  });
}

/** A delivery queue's batch, consumed: claims, sends and ends the transfers of each destination. */
export function deliveryRound(
  shell: FetchShell,
  sending: EdgeSending,
  call: CallContext,
  batch: { messages: ReadonlyArray<{ body: unknown }>; ackAll(): void },
): Promise<void> {
  return shell.run(call, async (scope) => {
    await scope.measureClock();
    await consumeDeliveries(batch, sending, shell.config, scope.ports());
  });
}

/**
 * The delivery queue of a runtime that has none: destinations dispatched by a round are delivered by
 * the same process right after it, one after another; one with more due is taken again in the next.
 */
export function inProcessQueue(): DeliveryQueue & { take(): DeliveryMessage[] } {
  const waiting = new Map<string, DeliveryMessage>();
  const add = (body: DeliveryMessage) => void waiting.set(body.destination, body);
  return {
    send: async (body) => add(body),
    sendBatch: async (messages) => {
      for (const { body } of messages) add(body);
    },
    take() {
      const taken = [...waiting.values()];
      waiting.clear();
      return taken;
    },
  };
}

/**
 * A round on a runtime without a queue: the scheduled round, then the delivery of what it found, in
 * this process. What a runtime's cron or timer calls (Deno.cron, a drain loop on Bun).
 */
export async function localRound(shell: FetchShell, sending: Omit<EdgeSending, 'queue'>, call: CallContext) {
  const queue = inProcessQueue();
  const withQueue = { ...sending, queue };
  await scheduledRound(shell, withQueue, call);
  const messages = queue.take().map((body) => ({ body }));
  if (messages.length > 0) await deliveryRound(shell, { ...sending, queue: null }, call, { messages, ackAll() {} });
}
