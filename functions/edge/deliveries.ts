import { reclaimLapsedAttempts, settleStaleDestinations } from '../../core/dissemination/claims.ts';
import { type DeliverDueResult, deliverDue, reachableDue } from '../../core/dissemination/deliver-due.ts';
import type { TransferMethods } from '../../core/dissemination/methods.ts';
import type { DisseminationHost } from '../../core/dissemination/ports.ts';
import { edgeCanReach } from '../../core/dissemination/reach.ts';
import type { SourceReader } from '../../core/dissemination/send.ts';
import { memorySpool } from '../../core/dissemination/spooled-filter.ts';
import type { Ports } from '../../core/ports.ts';
import type { EdgeEnvConfig } from '../env.ts';
import { azureMethod } from '../transfer-methods/azure.ts';
import { httpMethod } from '../transfer-methods/http.ts';
import { portalMethod } from '../transfer-methods/portal.ts';
import { s3Method } from '../transfer-methods/s3.ts';
import { webdavMethod } from '../transfer-methods/webdav.ts';
import { workerFilters } from '../workers/filters.ts';

/**
 * The most filtered output the edge keeps in memory to learn its size before sending (of a
 * Worker's 128 MB; a Lambda or Deno Deploy function has no more to count on).
 */
const EDGE_SPOOL_BYTES = 32 * 1024 * 1024;

/** One message of the delivery queue: a destination with due transfers the edge can send. */
export interface DeliveryMessage {
  destination: string;
}

/** What the edge uses of a queue's producer (Cloudflare Queues, SQS, or a loop in the process). */
export interface DeliveryQueue {
  send(body: DeliveryMessage): Promise<unknown>;
  sendBatch(messages: Iterable<{ body: DeliveryMessage }>): Promise<unknown>;
}

/** How the edge sends, wherever it runs: the methods that need no more than fetch, and where bytes come from. */
export interface EdgeSending {
  methods: TransferMethods;
  sources: SourceReader;
  /** Where a destination with more due than its run could send goes back to; none: the next run finds it. */
  queue: DeliveryQueue | null;
}

/** The transfer methods every runtime with fetch can run; a shell adds those of its bindings (R2). */
export const fetchMethods = (): TransferMethods => ({
  s3: s3Method(),
  http: httpMethod(),
  portal: portalMethod(),
  azure: azureMethod(),
  webdav: webdavMethod(),
});

/** Destinations looked at per cron run: the longest waiting, reachable here or not. */
const DISPATCH_LIMIT = 500;
/** A queue takes at most 100 messages per sendBatch. */
const BATCH = 100;

const reachesFor = (config: EdgeEnvConfig) => (host: DisseminationHost) =>
  edgeCanReach(host, { allowPrivate: config.ECPDS_EDGE_ALLOW_PRIVATE });

/**
 * The cron's share of delivery: transfers of movers that stopped renewing their leases (a Worker
 * cut off mid-send, a Node mover gone) go back to the queue, and the due destinations the edge can
 * reach are sent to the delivery queue. Answers the destinations queued.
 */
export async function dispatchDue(ports: Ports, config: EdgeEnvConfig, queue: DeliveryQueue): Promise<string[]> {
  await reclaimLapsedAttempts(ports);
  await settleStaleDestinations(ports);
  const names = await reachableDue(ports, reachesFor(config), DISPATCH_LIMIT);
  for (let at = 0; at < names.length; at += BATCH) {
    await queue.sendBatch(names.slice(at, at + BATCH).map((destination) => ({ body: { destination } })));
  }
  return names;
}

/** What the consumer uses of a queue batch (Cloudflare's MessageBatch). */
export interface DeliveryBatch {
  messages: ReadonlyArray<{ body: unknown }>;
  ackAll(): void;
}

/**
 * The queue consumer: each destination of the batch in turn (a Worker keeps six connections open
 * at most), delivered through core's deliverDue within the run's budget. Every message is acked:
 * a duplicate or a destination no longer due costs one claim that finds nothing, and one whose
 * budget ran out is queued again rather than retried.
 */
export async function consumeDeliveries(
  batch: DeliveryBatch,
  sending: EdgeSending,
  config: EdgeEnvConfig,
  ports: Ports,
): Promise<Map<string, DeliverDueResult>> {
  const names = [...new Set(batch.messages.map((m) => destinationOf(m.body)).filter((n) => n !== null))];
  const mover = `${config.ECPDS_EDGE_MOVER_NAME}-${crypto.randomUUID().slice(0, 8)}`;
  const { methods, sources } = sending;
  const until = Date.now() + config.ECPDS_EDGE_BUDGET_SECONDS * 1000;
  const results = new Map<string, DeliverDueResult>();
  for (const destination of names) {
    const result = await deliverDue(
      ports,
      { methods, sources, filters: workerFilters, spool: memorySpool(EDGE_SPOOL_BYTES) },
      {
        destination,
        mover,
        reaches: reachesFor(config),
        concurrency: config.ECPDS_EDGE_CONCURRENCY,
        leaseMs: config.ECPDS_EDGE_LEASE_SECONDS * 1000,
        // As for Node movers: at most half the lease, so a send renews well before it would stop itself.
        heartbeatMs: Math.min(config.ECPDS_EDGE_HEARTBEAT_SECONDS, config.ECPDS_EDGE_LEASE_SECONDS / 2) * 1000,
        budgetMs: Math.max(0, until - Date.now()),
        workerSourcesOnly: true,
      },
    ).catch((error: unknown) => {
      ports.logger.error('edge delivery failed', { destination, reason: String(error) });
      return null;
    });
    if (result) results.set(destination, result);
    if (result?.more) await sending.queue?.send({ destination });
  }
  batch.ackAll();
  return results;
}

function destinationOf(body: unknown): string | null {
  const name = (body as Partial<DeliveryMessage> | null)?.destination;
  return typeof name === 'string' && name !== '' ? name : null;
}
