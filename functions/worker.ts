import type { ExecutionContext } from 'hono';
import { sweepExpired } from '../core/data-files/handlers.ts';
import { createIsolate, type Isolate, requestScope, type WorkerContext, type WorkerEnv } from './workers/runtime.ts';

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

  async scheduled(_controller: unknown, env: WorkerEnv, ctx: WorkerContext): Promise<void> {
    isolate ??= createIsolate(env);
    const scope = requestScope(env, ctx, isolate);
    try {
      await sweepExpired(scope.ports());
    } finally {
      scope.finish();
    }
  },
};
