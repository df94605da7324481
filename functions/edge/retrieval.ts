import { messageOf } from '../../core/common/errors.ts';
import type { SourceReader } from '../../core/dissemination/send.ts';
import type { Ports } from '../../core/ports.ts';
import { recordTogether, retrieve } from '../../core/retrieval/retrieve.ts';
import type { ObjectStore } from '../../core/store/ports.ts';
import type { EdgeEnvConfig } from '../env.ts';

/**
 * A cron invocation of a Worker has 30 s of wall time when the cron runs more often than hourly, and
 * six connections open at once: retrievals get two thirds of it, two at a time (a source read and an
 * R2 write each, beside the database client), and a few files per run, so that a run stays well
 * within the subrequests an invocation is allowed.
 */
const RUN_BUDGET_MS = 20_000;
const AT_ONCE = 2;
const FILES_PER_RUN = 8;

export interface RetrievalRun {
  stored: number;
  failed: number;
  lost: number;
}

/**
 * The cron's retrievals: claims the files waiting for their bytes (SCHE) a few at a time and streams
 * each from its source (http(s) on ECPDS_SOURCE_HOSTS; on Workers an R2 object of ECPDS_SOURCE_BUCKETS) into
 * the store. The lease outlasts the run, so no renewal is needed; a retrieval still running when the run's
 * time is up is aborted and its file tried again by a later run (or a Node retriever sharing the store).
 */
export async function retrieveDue(
  ports: Ports,
  config: EdgeEnvConfig,
  sources: SourceReader,
  store: ObjectStore,
): Promise<RetrievalRun> {
  const mover = `${config.ECPDS_EDGE_MOVER_NAME}-${crypto.randomUUID().slice(0, 8)}`;
  const leaseMs = config.ECPDS_EDGE_LEASE_SECONDS * 1000;
  // Half the lease at most: a file is never fetched here while its lease could lapse to another retriever.
  const budgetMs = Math.min(RUN_BUDGET_MS, leaseMs / 2);
  const timeUp = new AbortController();
  const timer = setTimeout(
    () => timeUp.abort(new Error(`Interrupted: the run of DataMover=${mover} ran out of time`)),
    budgetMs,
  );
  const repo = ports.repos.retrieval;
  const deps = { ports, repo, store, sources, record: recordTogether(repo) };
  const run: RetrievalRun = { stored: 0, failed: 0, lost: 0 };
  try {
    for (let taken = 0; taken < FILES_PER_RUN && !timeUp.signal.aborted; ) {
      const claims = await ports.repos.retrieval.claim(mover, leaseMs, Math.min(AT_ONCE, FILES_PER_RUN - taken));
      if (claims.length === 0) break;
      taken += claims.length;
      const outcomes = await Promise.all(claims.map((claim) => retrieve(deps, mover, claim, timeUp.signal)));
      for (const outcome of outcomes) run[outcome]++;
    }
  } catch (error) {
    ports.logger.error('edge retrieval failed', { mover, reason: messageOf(error) });
  } finally {
    clearTimeout(timer);
  }
  return run;
}
