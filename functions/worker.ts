import type { ExecutionContext } from 'hono';
import { messageOf } from '../core/common/errors.ts';
import { sweep } from '../core/retention/sweep.ts';
import { consumeDeliveries, type DeliveryBatch, dispatchDue } from './workers/edge.ts';
import {
  consoleLogger,
  createIsolate,
  type Isolate,
  type RequestScope,
  requestScope,
  type WorkerContext,
  type WorkerEnv,
} from './workers/runtime.ts';

// Built on the first request from the isolate's environment, which does not change while it lives.
let isolate: Isolate | null = null;

/** Runs `work` with this invocation's scope (its database client), finished however `work` ends. */
async function inScope<T>(
  env: WorkerEnv,
  ctx: WorkerContext,
  work: (scope: RequestScope, isolate: Isolate) => T | Promise<T>,
): Promise<T> {
  isolate ??= createIsolate(env);
  const scope = requestScope(env, ctx, isolate);
  try {
    return await work(scope, isolate);
  } finally {
    scope.finish();
  }
}

/** Cloudflare Workers entry: the same catalogue and core, a database client per request. */
export default {
  fetch: (request: Request, env: WorkerEnv, ctx: WorkerContext): Promise<Response> =>
    inScope(env, ctx, (scope, { app }) => app.fetch(request, { scope }, ctx as ExecutionContext)),

  /** The expiry sweep and purge, then the due destinations the edge can reach, sent to the delivery queue. */
  scheduled: (_controller: unknown, env: WorkerEnv, ctx: WorkerContext): Promise<void> =>
    inScope(env, ctx, async (scope, { config }) => {
      await scope.measureClock();
      // One failing does not keep the other from running.
      const retention = {
        maxTransferLifeDays: config.ECPDS_MAX_TRANSFER_LIFE_DAYS,
        maxIdentityCount: config.ECPDS_MAX_IDENTITY_COUNT,
        batchSize: config.ECPDS_PURGE_BATCH,
      };
      await sweep(scope.ports(), retention).catch((e) =>
        consoleLogger.error('expiry sweep failed', { reason: messageOf(e) }),
      );
      if (env.ECPDS_QUEUE) await dispatchDue(scope.ports(), config, env.ECPDS_QUEUE);
    }),

  /** The delivery queue's consumer: claims, sends and ends the transfers of each destination. */
  queue: (batch: DeliveryBatch, env: WorkerEnv, ctx: WorkerContext): Promise<void> =>
    inScope(env, ctx, async (scope, { config }) => {
      await scope.measureClock();
      await consumeDeliveries(batch, env, config, scope.ports());
    }),
};
