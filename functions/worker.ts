import type { ExecutionContext } from 'hono';
import { messageOf } from '../core/common/errors.ts';
import { sweepExpired } from '../core/data-files/handlers.ts';
import { consumeDeliveries, type DeliveryBatch, dispatchDue } from './workers/edge.ts';
import {
  consoleLogger,
  createIsolate,
  type Isolate,
  requestScope,
  type WorkerContext,
  type WorkerEnv,
} from './workers/runtime.ts';

// Built on the first request from the isolate's environment, which does not change while it lives.
let isolate: Isolate | null = null;

/** Cloudflare Workers entry: the same catalogue and core, a database client per request. */
export default {
  async fetch(request: Request, env: WorkerEnv, ctx: WorkerContext): Promise<Response> {
    isolate ??= createIsolate(env);
    const scope = requestScope(env, ctx, isolate);
    try {
      return await isolate.app.fetch(request, { scope }, ctx as ExecutionContext);
    } finally {
      scope.finish();
    }
  },

  /** The expiry sweep, then the due destinations the edge can reach, sent to the delivery queue. */
  async scheduled(_controller: unknown, env: WorkerEnv, ctx: WorkerContext): Promise<void> {
    isolate ??= createIsolate(env);
    const scope = requestScope(env, ctx, isolate);
    try {
      // One failing does not keep the other from running.
      await sweepExpired(scope.ports()).catch((e) =>
        consoleLogger.error('expiry sweep failed', { reason: messageOf(e) }),
      );
      if (env.ECPDS_QUEUE) await dispatchDue(scope.ports(), isolate.config, env.ECPDS_QUEUE);
    } finally {
      scope.finish();
    }
  },

  /** The delivery queue's consumer: claims, sends and ends the transfers of each destination. */
  async queue(batch: DeliveryBatch, env: WorkerEnv, ctx: WorkerContext): Promise<void> {
    isolate ??= createIsolate(env);
    const scope = requestScope(env, ctx, isolate);
    try {
      await consumeDeliveries(batch, env, isolate.config, scope.ports());
    } finally {
      scope.finish();
    }
  },
};
