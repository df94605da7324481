import type { ExecutionContext } from 'hono';
import { messageOf } from '../core/common/errors.ts';
import { sweep } from '../core/retention/sweep.ts';
import { consumeDeliveries, type DeliveryBatch, dispatchDue } from './workers/edge.ts';
import { retrieveDue } from './workers/retrieval.ts';
import {
  consoleLogger,
  createIsolate,
  type Isolate,
  type RequestScope,
  requestScope,
  type WorkerContext,
  type WorkerEnv,
} from './workers/runtime.ts';

/**
 * The Worker's handlers, each invocation run in the isolate `isolateOf` answers for its environment.
 * The same catalogue and core as Node, a database client per invocation.
 */
export function edgeWorker(isolateOf: (env: WorkerEnv) => Isolate) {
  /** Runs `work` with this invocation's scope (its database client), finished however `work` ends. */
  async function inScope<T>(
    env: WorkerEnv,
    ctx: WorkerContext,
    work: (scope: RequestScope, isolate: Isolate) => T | Promise<T>,
  ): Promise<T> {
    const isolate = isolateOf(env);
    const scope = requestScope(env, ctx, isolate);
    try {
      return await work(scope, isolate);
    } finally {
      scope.finish();
    }
  }

  return {
    fetch: (request: Request, env: WorkerEnv, ctx: WorkerContext): Promise<Response> =>
      inScope(env, ctx, (scope, { app }) => app.fetch(request, { scope }, ctx as ExecutionContext)),

    /**
     * The expiry sweep and purge, then (with a store) retrievals of the files put since, then the due
     * destinations the edge can reach, sent to the delivery queue: a file retrieved here goes out in the
     * same run.
     */
    scheduled: (_controller: unknown, env: WorkerEnv, ctx: WorkerContext): Promise<void> =>
      inScope(env, ctx, async (scope, { config, store }) => {
        await scope.measureClock();
        // One failing does not keep the others from running.
        const retention = {
          maxTransferLifeDays: config.ECPDS_MAX_TRANSFER_LIFE_DAYS,
          maxIdentityCount: config.ECPDS_MAX_IDENTITY_COUNT,
          batchSize: config.ECPDS_PURGE_BATCH,
        };
        await sweep(scope.ports(), retention).catch((e) =>
          consoleLogger.error('expiry sweep failed', { reason: messageOf(e) }),
        );
        if (store) await retrieveDue(scope.ports(), config, env, store);
        if (env.ECPDS_QUEUE) await dispatchDue(scope.ports(), config, env.ECPDS_QUEUE);
      }),

    /** The delivery queue's consumer: claims, sends and ends the transfers of each destination. */
    queue: (batch: DeliveryBatch, env: WorkerEnv, ctx: WorkerContext): Promise<void> =>
      inScope(env, ctx, async (scope, { config }) => {
        await scope.measureClock();
        await consumeDeliveries(batch, env, config, scope.ports());
      }),
  };
}

// Built on the first invocation from the isolate's environment, which does not change while it lives.
let isolate: Isolate | null = null;

/** Cloudflare Workers entry. */
export default edgeWorker((env) => (isolate ??= createIsolate(env)));
