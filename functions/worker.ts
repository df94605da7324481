import { SecretBox } from '../core/common/crypto.ts';
import { sweepExpired } from '../core/data-files/handlers.ts';
import { createApp } from './http/app.ts';
import { consoleLogger, requestPorts, type WorkerContext, type WorkerEnv } from './workers/runtime.ts';

/** Cloudflare Workers entry: the same catalogue and core, a database client per request. */
export default {
  async fetch(request: Request, env: WorkerEnv, ctx: WorkerContext): Promise<Response> {
    const { ports, finish } = requestPorts(env, ctx);
    const app = createApp({
      logger: consoleLogger,
      trustProxy: false,
      maxBodyBytes: Number(env.ECPDS_MAX_BODY_BYTES ?? 10 * 1024 * 1024),
      portsFor: ports,
      metricsPublic: /^(1|true|yes|on)$/i.test(env.ECPDS_METRICS_PUBLIC ?? ''),
      clientAddress: (c) => c.req.header('cf-connecting-ip') ?? 'unknown',
      console: { cookieSecret: SecretBox.fromBase64(env.ECPDS_SECRET_KEY).derive('console-cookie') },
    });
    try {
      return await app.fetch(request);
    } finally {
      finish();
    }
  },

  async scheduled(_controller: unknown, env: WorkerEnv, ctx: WorkerContext): Promise<void> {
    const { ports, finish } = requestPorts(env, ctx);
    try {
      await sweepExpired(ports());
    } finally {
      finish();
    }
  },
};
