import { randomUUID } from 'node:crypto';
import { startClaimRunner } from '../../core/common/claim-runner.ts';
import { messageOf } from '../../core/common/errors.ts';
import { runHostCheck } from '../../core/host-checks/check.ts';
import { DEFAULT_CHECK_FREQUENCY_MS, leaseMsFor } from '../../core/host-checks/policy.ts';
import type { HostCheckClaim } from '../../core/host-checks/ports.ts';
import type { Ports } from '../../core/ports.ts';
import { nodeTransferMethods } from '../transfer-methods/index.ts';

export interface HostCheckerOptions {
  /** Checks under way at once over every server sharing the database; 0 checks nothing here. */
  concurrency: number;
  /** Looks for due hosts this often. */
  pollMs: number;
  /** Each check is cut after this long. */
  timeoutMs: number;
  /** The directories `file` hosts may use (ECPDS_FILE_HOST_ROOTS). */
  fileRoots: readonly string[];
}

export interface HostChecker {
  inFlight(): number;
  /** Looks for due hosts now rather than at the next poll. */
  wake(): void;
  /** Stops claiming and aborts the checks under way (their results are still written). */
  stop(): Promise<void>;
}

/**
 * Checks the hosts whose `check` is on when they are due, a few at once: a check is held under a lease
 * (one per host over every server), cut at its timeout (the lease outlasts it, so no renewal is needed),
 * and its result written once it ends, in its own statement: no transaction is open while it connects.
 */
export function startHostChecker(ports: Ports, options: HostCheckerOptions): HostChecker {
  const { repos, logger } = ports;
  // Its own methods: a check's sessions are never the sends' idle ones, and close with the checker.
  const methods = nodeTransferMethods({ fileRoots: options.fileRoots });
  const leaseMs = leaseMsFor(options.timeoutMs);

  const runner = startClaimRunner({
    concurrency: options.concurrency,
    pollMs: options.pollMs,
    claim: (free) =>
      repos.hostChecks.claim(`${randomUUID()}`, leaseMs, free, options.concurrency, DEFAULT_CHECK_FREQUENCY_MS),
    keyOf: (claim: HostCheckClaim) => Number(claim.host.hostId),
    onClaimError: (error) => logger.error('host check claim failed', { reason: messageOf(error) }),
    async run(claim, controller) {
      const hostId = Number(claim.host.hostId);
      const result = await runHostCheck(ports, methods, claim.host, options.timeoutMs, controller.signal);
      // A check cut by the server's stop says nothing of the host: its lease lapses and another server checks it.
      if (runner.stopping() && controller.signal.aborted) return;
      try {
        if (!(await repos.hostChecks.finish(claim.claim, hostId, result))) {
          logger.warn('host check ended after its lease lapsed', { hostId });
        }
      } catch (error) {
        logger.error('host check not recorded', { hostId, reason: messageOf(error) });
      }
      if (!result.ok) logger.warn('host check failed', { hostId, reason: result.message });
    },
  });

  return {
    inFlight: runner.inFlight,
    wake: runner.wake,
    async stop() {
      await runner.stop(() => new Error('The server is stopping'));
      await Promise.all(Object.values(methods).map((m) => m.close()));
    },
  };
}
