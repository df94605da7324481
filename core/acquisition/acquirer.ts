import { startClaimRunner } from '../common/claim-runner.ts';
import { messageOf } from '../common/errors.ts';
import type { AcquisitionClaim } from './ports.ts';
import { maximumDurationOf, type RunDeps, runAcquisition } from './run.ts';

export interface AcquirerOptions {
  /** The mover's name: who holds a run. */
  name: string;
  /** Hosts this mover lists at once. */
  concurrency: number;
  /** Runs under way at once over every mover sharing the database. */
  most: number;
  /** How long a run stays this mover's without a renewal. */
  leaseMs: number;
  /** Looks for due hosts this often. */
  pollMs: number;
}

export interface Acquirer {
  inFlight(): number;
  /** Stops claiming and cuts the runs under way; their hosts are due again at once. */
  stop(): Promise<void>;
}

/** Between two runs of a host that sets no `acquisitionFrequency`. */
export const DEFAULT_FREQUENCY_MS = 5 * 60_000;

class RunTakenAway extends Error {}

/**
 * Lists the Acquisition hosts when they are due, a few at once: a run is held under a lease (one run
 * per host over every mover), cut at its maximumDuration, and its output recorded once it ends.
 */
export function startAcquirer(deps: RunDeps, options: AcquirerOptions): Acquirer {
  const { ports } = deps.ctx;
  const { repos, logger } = ports;
  const hostIdOf = (claim: AcquisitionClaim) => Number(claim.host.hostId);

  const renewal = setInterval(() => void renew(), Math.max(100, Math.floor(options.leaseMs / 3)));
  renewal.unref?.();
  async function renew() {
    for (const [hostId, run] of runner.running()) {
      try {
        if (!(await repos.acquisition.renew(options.name, hostId, options.leaseMs))) {
          run.controller.abort(new RunTakenAway(`the run was taken away from DataMover=${options.name}`));
        }
      } catch (error) {
        logger.error('acquisition lease renewal failed', { mover: options.name, hostId, reason: messageOf(error) });
      }
    }
  }

  const runner = startClaimRunner({
    concurrency: options.concurrency,
    pollMs: options.pollMs,
    claim: (free) => repos.acquisition.claim(options.name, options.leaseMs, free, options.most),
    keyOf: hostIdOf,
    onClaimError: (error) =>
      logger.error('acquisition claim failed', { mover: options.name, reason: messageOf(error) }),
    // Not async: a host whose options cannot be read fails its claim, not its run.
    run(claim, controller) {
      const hostId = hostIdOf(claim);
      const maximumMs = maximumDurationOf(claim.host.data);
      const cut = setTimeout(() => controller.abort(new Error(`maximumDuration (${maximumMs} ms) reached`)), maximumMs);
      return (async () => {
        const record = await runAcquisition(deps, claim, controller.signal);
        clearTimeout(cut);
        // A run cut by a stop is due again at once, on whichever mover is left.
        const nextInMs = runner.stopping()
          ? 0
          : claim.frequencyMs && claim.frequencyMs > 0
            ? claim.frequencyMs
            : DEFAULT_FREQUENCY_MS;
        try {
          if (!(await repos.acquisition.finish(options.name, hostId, record, nextInMs))) {
            logger.warn('acquisition run ended after it was taken away', { mover: options.name, hostId });
          }
        } catch (error) {
          logger.error('acquisition run not recorded', { mover: options.name, hostId, reason: messageOf(error) });
        }
      })();
    },
  });

  return {
    inFlight: runner.inFlight,
    async stop() {
      await runner.stop(() => new Error(`DataMover=${options.name} stopped`));
      clearInterval(renewal);
    },
  };
}
