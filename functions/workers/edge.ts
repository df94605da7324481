import { reclaimLapsedAttempts, settleStaleDestinations } from '../../core/dissemination/claims.ts';
import { type DeliverDueResult, deliverDue, reachableDue } from '../../core/dissemination/deliver-due.ts';
import type { DisseminationHost } from '../../core/dissemination/ports.ts';
import { edgeCanReach } from '../../core/dissemination/reach.ts';
import { memorySpool } from '../../core/dissemination/spooled-filter.ts';
import type { Ports } from '../../core/ports.ts';
import { azureMethod } from '../transfer-methods/azure.ts';
import { httpMethod } from '../transfer-methods/http.ts';
import { portalMethod } from '../transfer-methods/portal.ts';
import { type R2BucketLike, r2Method } from '../transfer-methods/r2.ts';
import { s3Method } from '../transfer-methods/s3.ts';
import { webdavMethod } from '../transfer-methods/webdav.ts';
import { workerFilters } from './filters.ts';
import {
  type DeliveryMessage,
  type DeliveryQueue,
  type WorkerConfig,
  type WorkerEnv,
  workerSourceReader,
} from './runtime.ts';

/** The most filtered output a Worker keeps in memory to learn its size before sending (of its 128 MB). */
const WORKER_SPOOL_BYTES = 32 * 1024 * 1024;

/** Destinations looked at per cron run: the longest waiting, reachable here or not. */
const DISPATCH_LIMIT = 500;
/** A queue takes at most 100 messages per sendBatch. */
const BATCH = 100;

const reachesFor = (config: WorkerConfig) => (host: DisseminationHost) =>
  edgeCanReach(host, { allowPrivate: config.ECPDS_EDGE_ALLOW_PRIVATE });

/**
 * The cron's share of delivery: transfers of movers that stopped renewing their leases (a Worker
 * cut off mid-send, a Node mover gone) go back to the queue, and the due destinations the edge can
 * reach are sent to the delivery queue. Answers the destinations queued.
 */
export async function dispatchDue(ports: Ports, config: WorkerConfig, queue: DeliveryQueue): Promise<string[]> {
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
  env: WorkerEnv,
  config: WorkerConfig,
  ports: Ports,
): Promise<Map<string, DeliverDueResult>> {
  const names = [...new Set(batch.messages.map((m) => destinationOf(m.body)).filter((n) => n !== null))];
  const mover = `${config.ECPDS_EDGE_MOVER_NAME}-${crypto.randomUUID().slice(0, 8)}`;
  const methods = {
    s3: s3Method(),
    http: httpMethod(),
    r2: r2Method((name) => bucketOf(env, name)),
    portal: portalMethod(),
    azure: azureMethod(),
    webdav: webdavMethod(),
  };
  const sources = workerSourceReader(config, env);
  const until = Date.now() + config.ECPDS_EDGE_BUDGET_SECONDS * 1000;
  const results = new Map<string, DeliverDueResult>();
  for (const destination of names) {
    const result = await deliverDue(
      ports,
      { methods, sources, filters: workerFilters, spool: memorySpool(WORKER_SPOOL_BYTES) },
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
    if (result?.more) await env.ECPDS_QUEUE?.send({ destination });
  }
  batch.ackAll();
  return results;
}

function destinationOf(body: unknown): string | null {
  const name = (body as Partial<DeliveryMessage> | null)?.destination;
  return typeof name === 'string' && name !== '' ? name : null;
}

/** The binding named by a host's `r2.binding`, when it is an R2 bucket. */
function bucketOf(env: WorkerEnv, name: string): R2BucketLike | null {
  const bound = (env as unknown as Record<string, unknown>)[name] as Partial<R2BucketLike> | undefined;
  return bound && typeof bound.put === 'function' && typeof bound.delete === 'function'
    ? (bound as R2BucketLike)
    : null;
}
