import { readOptions } from '../hosts/options.ts';
import type { AcquiredReader, SourceHost } from '../retrieval/ports.ts';
import type { Wis2Intake } from './wis2-intake.ts';
import { downloadRulesOf, isSubscription } from './wis2-run.ts';

/**
 * A subscription's files at retrieval: the bytes verified when their message came, kept by this process;
 * else (another process registered them, or this one restarted) the link downloaded again under the same
 * rules, its size checked against the registered one by the retrieval.
 */
export function subscriptionReader(intake: Pick<Wis2Intake, 'download' | 'verified'>): AcquiredReader {
  return {
    reads: (host: SourceHost) => isSubscription(readOptions(host.data)),
    async open(host, href, signal) {
      const hostId = Number(host.hostId);
      const kept = intake.verified.take(hostId, href);
      const bytes = kept ?? (await intake.download(href, downloadRulesOf(readOptions(host.data)), signal));
      return { size: bytes.length, stream: once(bytes), host: null };
    },
  };
}

async function* once(bytes: Uint8Array) {
  yield bytes;
}
