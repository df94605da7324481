import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import * as apiClients from '../../core/api-clients/clients.ts';
import type { Ports } from '../../core/ports.ts';
import worker from '../../functions/worker.ts';
import { createIsolate, type Isolate, requestScope, type WorkerEnv } from '../../functions/workers/runtime.ts';
import { type Reply, readReply } from '../support/reply.ts';

const workerEnv = env as unknown as WorkerEnv;

/** One request through the Worker's own fetch handler, waiting for its waitUntil work. */
export async function call(
  method: string,
  path: string,
  options: {
    auth?: string;
    body?: unknown;
    form?: Record<string, string>;
    scheme?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.auth) headers.authorization = options.auth;
  let body: string | undefined;
  if (options.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(options.form).toString();
  } else if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`${options.scheme ?? 'https'}://edge.test${path}`, { method, headers, body }),
    workerEnv,
    ctx,
  );
  const reply = await readReply(res);
  await waitOnExecutionContext(ctx);
  return reply;
}

let testIsolate: Isolate | null = null;

/** Runs core work with the Worker's own per-request ports (a fresh database client). */
export async function withPorts<T>(work: (ports: Ports) => Promise<T>): Promise<T> {
  const ctx = createExecutionContext();
  testIsolate ??= createIsolate(workerEnv);
  const scope = requestScope(workerEnv, ctx, testIsolate);
  try {
    return await work(scope.ports());
  } finally {
    scope.finish();
    await waitOnExecutionContext(ctx);
  }
}

/** One request through an isolate of its own, built from another environment. */
export async function throughIsolate(env: WorkerEnv, request: Request): Promise<Response> {
  const ctx = createExecutionContext();
  const isolate = createIsolate(env);
  const scope = requestScope(env, ctx, isolate);
  try {
    const res = await isolate.app.fetch(request, { scope }, ctx);
    const body = await res.arrayBuffer();
    return new Response(body, { status: res.status, headers: res.headers });
  } finally {
    scope.finish();
    await waitOnExecutionContext(ctx);
  }
}

export async function client(username: string, permissions: string[]): Promise<string> {
  const { secret } = await withPorts((ports) =>
    apiClients.create(ports, 'test', { username, permissions, origin: 'cli' }),
  );
  return `Basic ${btoa(`${username}:${secret}`)}`;
}

export const sourcePort = () => (env as unknown as { ECPDS_SOURCE_HOSTS: string }).ECPDS_SOURCE_HOSTS;
/** The R2 bucket of data-file sources (`r2://ECPDS_SOURCES/<key>`), Miniflare's local R2. */
export const sourceBucket = () => (env as unknown as { ECPDS_SOURCES: R2Bucket }).ECPDS_SOURCES;
export { worker, workerEnv };
