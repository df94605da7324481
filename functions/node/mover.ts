import { sweepExpired } from '../../core/data-files/handlers.ts';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { nodeTransferMethods } from '../transfer-methods/index.ts';
import type { MoverConfig, NodeConfig } from './config.ts';
import { batchedStdout, jsonLogger } from './logger.ts';
import { MOVERS_CHANNEL, openRuntime, type Runtime } from './runtime.ts';
import { nodeSourceReader } from './sources.ts';

/**
 * A data mover on this runtime's database, with the Node transfer methods and source reader.
 * It also runs the expiry sweep on its heartbeat, so that a deployment of movers alone expires.
 */
export function startNodeMover(runtime: Runtime, config: NodeConfig, mover: MoverConfig = config.mover): Mover {
  let lastSweep = 0;
  const started = startMover(
    {
      ports: runtime.ports,
      stats: runtime.engineStats,
      methods: nodeTransferMethods({ fileRoots: mover.fileRoots }),
      sources: nodeSourceReader({ roots: config.sourceRoots, hosts: config.sourceHosts }),
      async onHeartbeat() {
        const now = Date.now();
        if (config.sweepSeconds === 0 || now - lastSweep < config.sweepSeconds * 1000) return;
        lastSweep = now;
        await sweepExpired(runtime.ports);
      },
    },
    mover,
  );
  runtime.onWake(started.wake);
  runtime.handle.signals
    ?.listen(MOVERS_CHANNEL, started.wake)
    .catch((e: unknown) => runtime.ports.logger.warn('movers cannot LISTEN: polling only', { reason: String(e) }));
  return started;
}

/** `ecpds-edge mover`: claims and sends until SIGTERM or SIGINT, then lets what is in flight finish. */
export async function runMoverProcess(config: NodeConfig) {
  const stdout = batchedStdout();
  const logger = jsonLogger(stdout.write);
  const runtime = await openRuntime(config, logger, { hold: true });
  const mover = startNodeMover(runtime, config, { ...config.mover, enabled: true });
  logger.info('mover started', {
    mover: config.mover.name,
    concurrency: config.mover.concurrency,
    database: runtime.handle.kind,
  });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('mover stopping', { signal, inFlight: mover.inFlight(), deadlineMs: config.mover.drainMs });
    await mover.stop(config.mover.drainMs);
    await runtime.close();
    logger.info('mover stopped', {});
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  return { mover, stop };
}
