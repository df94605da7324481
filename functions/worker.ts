import { type DeliveryBatch, type EdgeSending, fetchMethods } from './edge/deliveries.ts';
import { deliveryRound, scheduledRound } from './edge/rounds.ts';
import { type R2BucketLike, r2Method } from './transfer-methods/r2.ts';
import {
  callOf,
  createIsolate,
  type Isolate,
  type WorkerContext,
  type WorkerEnv,
  workerSourceReader,
} from './workers/runtime.ts';

/** How a Worker sends: the fetch methods, R2 through its bindings, and Cloudflare Queues for destinations. */
function workerSending(isolate: Isolate, env: WorkerEnv): EdgeSending {
  return {
    methods: { ...fetchMethods(), r2: r2Method((name) => bucketOf(env, name)) },
    sources: workerSourceReader(isolate.config, env),
    queue: env.ECPDS_QUEUE ?? null,
  };
}

/**
 * The Worker's handlers, each invocation run in the isolate `isolateOf` answers for its environment.
 * The same catalogue and core as Node, a database client per invocation.
 */
export function edgeWorker(isolateOf: (env: WorkerEnv) => Isolate) {
  return {
    fetch: (request: Request, env: WorkerEnv, ctx: WorkerContext): Promise<Response> =>
      isolateOf(env).fetch(request, callOf(ctx, request)),

    /** Sweep, retrievals, then the due destinations sent to the delivery queue (functions/edge/rounds.ts). */
    scheduled: (_controller: unknown, env: WorkerEnv, ctx: WorkerContext): Promise<void> => {
      const isolate = isolateOf(env);
      return scheduledRound(isolate, workerSending(isolate, env), callOf(ctx));
    },

    /** The delivery queue's consumer: claims, sends and ends the transfers of each destination. */
    queue: (batch: DeliveryBatch, env: WorkerEnv, ctx: WorkerContext): Promise<void> => {
      const isolate = isolateOf(env);
      return deliveryRound(isolate, workerSending(isolate, env), callOf(ctx), batch);
    },
  };
}

/** The binding named by a host's `r2.binding`, when it is an R2 bucket. */
function bucketOf(env: WorkerEnv, name: string): R2BucketLike | null {
  const bound = (env as unknown as Record<string, unknown>)[name] as Partial<R2BucketLike> | undefined;
  return bound && typeof bound.put === 'function' && typeof bound.delete === 'function'
    ? (bound as R2BucketLike)
    : null;
}

// Built on the first invocation from the isolate's environment, which does not change while it lives.
let isolate: Isolate | null = null;

/** Cloudflare Workers entry. */
export default edgeWorker((env) => (isolate ??= createIsolate(env)));
