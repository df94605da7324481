import { SecretBox } from '../core/crypto.ts';
import { sweepExpired } from '../core/services/datafiles.ts';
import { createApp } from './http/app.ts';
import { consoleLogger, requestPorts, type WorkerContext, type WorkerEnv } from './workers/runtime.ts';

/** Cloudflare Workers entry: the same catalogue and core, a database client per request. */
export default {
  async fetch(request: Request, env: WorkerEnv, ctx: WorkerContext): Promise<Response> {
    const { ports, finish, config } = requestPorts(env, ctx);
    const app = createApp({
      logger: consoleLogger,
      trustProxy: false,
      maxBodyBytes: config.ECPDS_MAX_BODY_BYTES,
      portsFor: ports,
      metricsPublic: config.ECPDS_METRICS_PUBLIC,
      clientAddress: (c) => c.req.header('cf-connecting-ip') ?? 'unknown',
      console: { cookieSecret: SecretBox.fromBase64(config.ECPDS_SECRET_KEY).derive('console-cookie') },
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
