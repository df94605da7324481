import v8 from 'node:v8';
import { startAcquirer } from '../../core/acquisition/acquirer.ts';
import type { Wis2Intake } from '../../core/acquisition/wis2-intake.ts';
import { subscriptionReader } from '../../core/acquisition/wis2-source.ts';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { sweep } from '../../core/retention/sweep.ts';
import { startRetriever } from '../../core/retrieval/retriever.ts';
import { sourceHostOpener } from '../../core/retrieval/source-host.ts';
import { nodeFilters } from '../transfer-methods/filters.ts';
import { nodeTransferMethods } from '../transfer-methods/index.ts';
import type { MoverConfig, NodeConfig } from './config.ts';
import { startHostChecker } from './host-checks.ts';
import { batchedStdout, jsonLogger } from './logger.ts';
import { parallelSumming } from './parallel-sums.ts';
import { MOVERS_CHANNEL, openRuntime, type Runtime } from './runtime.ts';
import { nodeSourceReader } from './sources.ts';
import { fileSpool } from './spool.ts';
import { probeRuntimeStore } from './store-probe.ts';
import { nodeWis2Intake } from './wis2-intake.ts';
import { mqttSubscriber } from './wis2-subscribe.ts';

/**
 * A data mover on this runtime's database, with the Node transfer methods and source reader.
 * It also runs the expiry sweep (and the purge) on its heartbeat, so that a deployment of movers alone
 * expires and purges.
 */
export function startNodeMover(runtime: Runtime, config: NodeConfig, mover: MoverConfig = config.mover): Mover {
  makeRoomForTransferBuffers();
  let lastSweep = 0;
  const started = startMover(
    {
      ports: runtime.ports,
      stats: runtime.engineStats,
      methods: nodeTransferMethods({ fileRoots: mover.fileRoots }),
      filters: nodeFilters(),
      spool: fileSpool(),
      sources: nodeSourceReader({ roots: config.sourceRoots, hosts: config.sourceHosts }),
      async onHeartbeat() {
        const now = Date.now();
        if (config.sweepSeconds === 0 || now - lastSweep < config.sweepSeconds * 1000) return;
        lastSweep = now;
        await sweep(runtime.ports, config.retention);
      },
    },
    mover,
  );
  // Shared: the bytes a subscription verified are read by this process's retriever rather than downloaded again.
  const wis2 = nodeWis2Intake();
  const retriever = startNodeRetriever(runtime, config, mover, wis2);
  const acquirer = startNodeAcquirer(runtime, config, mover, wis2);
  // Every mover checks hosts (one check per host over all of them): a deployment of movers alone checks too.
  const hostChecker =
    config.hostChecks.concurrency > 0
      ? startHostChecker(runtime.ports, { ...config.hostChecks, fileRoots: mover.fileRoots })
      : null;
  // A put elsewhere has files to retrieve as well as to send: both are woken, here and by NOTIFY.
  const wake = () => {
    started.wake();
    retriever?.wake();
  };
  runtime.onWake(wake);
  runtime.handle.signals
    ?.listen(MOVERS_CHANNEL, wake)
    .catch((e: unknown) => runtime.ports.logger.warn('movers cannot LISTEN: polling only', { reason: String(e) }));
  const offered = retriever ? runtime.ports.localRetrievers.add(retriever) : () => undefined;
  return {
    ...started,
    async stop(deadlineMs: number) {
      offered();
      await Promise.all([started.stop(deadlineMs), retriever?.stop(), acquirer?.stop(), hostChecker?.stop()]);
    },
  };
}

/** Lists the Acquisition hosts when due; their files need the store, so none runs without one. */
function startNodeAcquirer(runtime: Runtime, config: NodeConfig, mover: MoverConfig, intake: Wis2Intake) {
  if (!runtime.ports.store || config.acquisition.runs === 0) return null;
  // Its own methods: listing sessions are kept apart from the sends' and closed with the acquirer.
  const methods = nodeTransferMethods({ fileRoots: mover.fileRoots });
  const ctx = { ports: runtime.ports, requestId: `acquisition:${mover.name}`, caller: null };
  const acquirer = startAcquirer(
    { ctx, methods, wis2: { intake, subscriber: mqttSubscriber() } },
    {
      name: mover.name,
      concurrency: config.acquisition.runs,
      most: config.acquisition.runs,
      leaseMs: mover.leaseMs,
      pollMs: config.acquisition.pollMs,
    },
  );
  return {
    ...acquirer,
    async stop() {
      await acquirer.stop();
      await Promise.all(Object.values(methods).map((m) => m.close()));
    },
  };
}

/** Retrieves the registered files into the store, next to the mover that sends them (none without a store). */
function startNodeRetriever(runtime: Runtime, config: NodeConfig, mover: MoverConfig, wis2: Wis2Intake) {
  const { store } = runtime.ports;
  if (!store) return null;
  // Its own methods: a Source host's sessions are kept apart from the sends' and closed with the retriever.
  const methods = nodeTransferMethods({ fileRoots: mover.fileRoots });
  const retriever = startRetriever(
    {
      ports: runtime.ports,
      repo: runtime.ports.repos.retrieval,
      store,
      sources: nodeSourceReader({ roots: config.sourceRoots, hosts: config.sourceHosts }),
      sourceHosts: sourceHostOpener(runtime.ports, runtime.ports.repos.retrieval, methods, subscriptionReader(wis2)),
      summing: parallelSumming(),
    },
    {
      name: mover.name,
      concurrency: config.retrieval.concurrency,
      leaseMs: mover.leaseMs,
      pollMs: mover.pollMs,
    },
  );
  return {
    ...retriever,
    async stop() {
      await retriever.stop();
      await Promise.all(Object.values(methods).map((m) => m.close()));
    },
  };
}

/** `ecpds-edge mover`: claims and sends until SIGTERM or SIGINT, then lets what is in flight finish. */
export async function runMoverProcess(config: NodeConfig) {
  const stdout = batchedStdout();
  const logger = jsonLogger(stdout.write);
  const runtime = await openRuntime(config, logger, { hold: true });
  await probeRuntimeStore(runtime);
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

/**
 * Every byte sent passes through buffers outside the JavaScript heap (the read, ssh2's request and
 * its packets), and V8 counts them towards the old generation's next collection. On the mover's
 * small heap, V8's own growing factor then chose a full collection every few megabytes sent, which
 * more than doubled the CPU a large file cost (BENCHMARKS.md, "Large files over SFTP"). A fixed
 * factor of 3, within the range V8 picks from by itself, lets most of those buffers die in between.
 * An operator's own `--heap-growing-percent` is left alone.
 */
function makeRoomForTransferBuffers() {
  if (process.execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg))) return;
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}

const HEAP_GROWING_PERCENT = 200;
