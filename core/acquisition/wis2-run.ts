import { parseDuration } from '../data-files/schedule.ts';
import type { Ctx } from '../ports.ts';
import { yes } from './listing-lines.ts';
import type { AcquisitionClaim } from './ports.ts';
import type { RunOutput } from './run-output.ts';
import { type DownloadRules, globalCachesOf, takeMessage, type Wis2Intake } from './wis2-intake.ts';

/** A subscription's session at its broker: persistent unless `clean`, so that what comes between runs waits there. */
export interface SubscriptionSession {
  url: string;
  clientId: string;
  username: string | null;
  password: string | null;
  clean: boolean;
  topics: string[];
}

/**
 * Receives from a broker until `signal` aborts, handing each message to `take`, one at a time, and
 * acknowledging it once `take` resolved: a message not acted on is received again by the next session.
 */
export interface Wis2Subscriber {
  receive(
    session: SubscriptionSession,
    take: (topic: string, payload: Uint8Array, redelivered: boolean) => Promise<void>,
    signal: AbortSignal,
  ): Promise<void>;
}

export interface SubscriptionDeps {
  ctx: Ctx;
  intake: Wis2Intake;
  subscriber: Wis2Subscriber;
}

/** The reference's `http.mqttMode`: the host is a broker, its directory lines are topics. */
export const isSubscription = (options: Map<string, string>) => yes(options.get('http.mqttMode'));

/** How long a run stays subscribed (`http.mqttAwait`); the next run comes `acquisitionFrequency` after it. */
const DEFAULT_AWAIT_MS = 60_000;
/** Message ids are unique over 24 hours at least (WNM): they are remembered twice that. */
const REMEMBERED_MS = 48 * 3_600_000;
const DEFAULT_MAX_BYTES = 256 * 1024 * 1024;

/**
 * One run of a WIS2 subscription: the host's session at its broker receives the topics of its directory lines
 * for `http.mqttAwait`, and each message is taken as it comes (see takeMessage).
 */
export async function subscriptionRun(
  deps: SubscriptionDeps,
  claim: AcquisitionClaim,
  options: Map<string, string>,
  secret: { password: string | null },
  output: RunOutput,
  signal: AbortSignal,
) {
  const { ctx, intake, subscriber } = deps;
  const session = sessionOf(claim, options, secret.password);
  if (session.topics.length === 0) throw new Error('The host has no topic (its directory field is empty)');
  const awaitMs = parseDuration(options.get('http.mqttAwait') ?? '') ?? DEFAULT_AWAIT_MS;
  // A controller and a timer of its own: Node 20 may collect a timeout signal that only AbortSignal.any holds.
  const window = new AbortController();
  const timer = setTimeout(() => window.abort(new Error('mqttAwait reached')), awaitMs);
  const cut = () => window.abort(signal.reason);
  signal.addEventListener('abort', cut, { once: true });
  await ctx.ports.repos.acquisition.forgetReceived(new Date(ctx.ports.clock().getTime() - REMEMBERED_MS));
  output.line(`Subscribed to ${session.topics.join(', ')} for ${Math.round(awaitMs / 1000)} s`);
  const c = { ctx, intake, claim, options, rules: downloadRulesOf(options), signal, caches: globalCachesOf(claim) };
  let received = 0;
  try {
    await subscriber.receive(
      session,
      async (topic, payload, redelivered) => {
        received++;
        const { line, kind, cache } = await takeMessage(c, topic, payload, redelivered);
        output.entry(topic, line, kind);
        if (cache) output.cache(cache);
      },
      window.signal,
    );
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', cut);
  }
  // The window's end is the run's; a cut or a stop is told as such.
  signal.throwIfAborted();
  output.line(`Received ${received} message(s)`);
}

/** `acquisition.downloadHosts` (the names links may point to) and `acquisition.maximumSize` (bytes). */
export function downloadRulesOf(options: Map<string, string>): DownloadRules {
  return {
    hosts: (options.get('acquisition.downloadHosts') ?? '').split(/[,\s]+/).filter((h) => h !== ''),
    maxBytes: Number(options.get('acquisition.maximumSize')) || DEFAULT_MAX_BYTES,
  };
}

function sessionOf(claim: AcquisitionClaim, options: Map<string, string>, password: string | null) {
  const { host } = claim;
  const scheme = options.get('http.mqttScheme') ?? 'mqtts';
  const port = options.get('http.mqttPort') ?? (scheme === 'mqtt' ? '1883' : '8883');
  const topics = host.dir
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  return {
    url: options.get('http.mqttUrl') ?? `${scheme}://${host.host}:${port}`,
    clientId: options.get('http.mqttSubscriberId') ?? `ecpds-edge-${host.hostId}`,
    username: host.login === '' ? null : host.login,
    password,
    clean: yes(options.get('http.mqttCleanStart')),
    topics,
  };
}
