import { notFound } from '../common/errors.ts';
import type { Ports } from '../ports.ts';

const OUTCOMES = { done: 'listed to its end', failed: 'failed', cut: 'cut at maximumDuration or by a stop' };

/** The last run of an Acquisition host as an operator reads it: when, how it ended, then its output. */
export async function runOutput(ports: Ports, hostId: number): Promise<string> {
  const run = await ports.repos.acquisition.lastRun(hostId);
  if (!run) throw notFound(`Host ${hostId} has no acquisition run (not an Acquisition host, or never listed yet)`);
  const at = (date: Date | null) => date?.toISOString() ?? '-';
  const header = run.finishedAt
    ? `Host ${hostId}: last run ${OUTCOMES[run.outcome]}, started ${at(run.startedAt)}, ended ${at(run.finishedAt)}`
    : `Host ${hostId}: first run under way`;
  const now = run.runningOn ? `running now on DataMover=${run.runningOn}` : `next run due ${at(run.nextAt)}`;
  return [`${header}; ${now}`, run.output].filter((line) => line !== '').join('\n');
}
