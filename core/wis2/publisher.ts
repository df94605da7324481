import { type DrainOutcome, drainLoop } from '../common/drain-loop.ts';
import { messageOf } from '../common/errors.ts';
import type { Logger } from '../ports.ts';
import { type CachedCopy, cacheMessage, cacheTopic } from './cache-message.ts';
import { dataTimeOf } from './data-time.ts';
import { buildMessage, portalFileUrl, versionUrl } from './message.ts';
import { globalCacheOf, wis2Settings } from './options.ts';
import type { OutboxItem, ReceivedMessage, Sha512Reader, Wis2Broker, Wis2OutboxRepo } from './ports.ts';
import { isCoreTopic } from './topic.ts';

export interface PublisherDeps {
  outbox: Wis2OutboxRepo;
  broker: Wis2Broker;
  sha512: Sha512Reader;
  /** The database's clock, as the outbox's times are. */
  clock: () => Date;
  logger: Logger;
  /** The portal's public address, without the trailing '/': the links start with it. */
  portalOrigin: string;
  newId: () => string;
}

export interface PublisherOptions {
  /** Rows claimed at once; their messages go out together, in order, on the one connection. */
  batch: number;
  /** How long a claim holds its rows: a publisher that died leaves them to the others after it. */
  leaseMs: number;
  /** How often the outbox is looked at without being woken (rows of other servers, queue times reached). */
  pollMs: number;
  /** The first wait after the broker or the database failed, doubled each time up to `maxRetryMs`. */
  firstRetryMs: number;
  maxRetryMs: number;
}

/** How long published and dropped rows stay in the outbox (for an operator's look), and how often they go. */
const KEPT_MS = 7 * 86_400_000;
const PRUNE_EVERY_MS = 3600_000;

export const DEFAULT_PUBLISHER_OPTIONS: PublisherOptions = {
  batch: 100,
  leaseMs: 60_000,
  pollMs: 1000,
  firstRetryMs: 500,
  maxRetryMs: 15_000,
};

export interface Wis2Publisher {
  /** There may be new rows: look now rather than at the next poll. */
  wake(): void;
  /** Ends the loop once the messages in flight are acknowledged or given up. */
  stop(): Promise<void>;
}

type Prepared = { item: OutboxItem } & (
  | { topic: string; json: string }
  | { drop: string }
  | { postpone: string }
  | { hold: string }
);

/** Why a notice of core data waits: its link would need credentials, which WNM forbids for core data. */
export const CORE_HOLD =
  'held: core data without an open-access way (an active open-access incoming user associated with the destination)';

/**
 * Publishes the outbox's due rows, in order, until stopped: each message with QoS 1, marked
 * published only once the broker acknowledged it. When the broker can't be reached the claimed
 * rows are given back and the publisher waits (longer each time) before it tries again, from the
 * same oldest row: nothing is lost or reordered. No transaction is open while a message is sent.
 */
export function startWis2Publisher(deps: PublisherDeps, options: PublisherOptions = DEFAULT_PUBLISHER_OPTIONS) {
  return drainLoop({
    drain: () => publishDue(deps, options),
    onDrainError: (e) => deps.logger.warn('WIS2 notifications: the outbox could not be read', { reason: messageOf(e) }),
    prune: {
      everyMs: PRUNE_EVERY_MS,
      clock: deps.clock,
      run: (now) => deps.outbox.prune(new Date(now - KEPT_MS)),
      onError: (e) =>
        deps.logger.warn('WIS2 notifications: old outbox rows could not be deleted', { reason: messageOf(e) }),
    },
    pollMs: options.pollMs,
    firstRetryMs: options.firstRetryMs,
    maxRetryMs: options.maxRetryMs,
  }) satisfies Wis2Publisher;
}

/** One claim's worth: 'idle' when nothing was due, 'failed' when the broker refused a message. */
async function publishDue(deps: PublisherDeps, options: PublisherOptions): Promise<DrainOutcome> {
  const now = deps.clock();
  const items = await deps.outbox.claim(now, new Date(now.getTime() + options.leaseMs), options.batch, deps.newId);
  if (items.length === 0) return 'idle';
  const prepared: Prepared[] = [];
  for (const item of items) prepared.push(await prepare(deps, item));

  for (const p of prepared) {
    if ('drop' in p) await deps.outbox.finish([p.item.id], p.drop, deps.clock());
    if ('postpone' in p) {
      const wait = Math.min(options.firstRetryMs * 2 ** p.item.attempts, options.maxRetryMs * 20);
      await deps.outbox.postpone(p.item.id, new Date(deps.clock().getTime() + wait), p.postpone);
    }
    if ('hold' in p) {
      // Looked at again within a minute (by default): an open-access user associated meanwhile releases it.
      const wait = Math.min(options.firstRetryMs * 2 ** p.item.attempts, options.maxRetryMs * 4);
      await deps.outbox.hold(p.item.id, new Date(deps.clock().getTime() + wait), p.hold);
      if (p.item.attempts === 0) {
        deps.logger.warn('WIS2 notification held', { destination: p.item.destination, reason: p.hold });
      }
    }
  }
  const sending = prepared.filter((p): p is Prepared & { topic: string; json: string } => 'json' in p);
  // Sent together: MQTT.js writes them in this order on one connection, and the broker keeps it.
  const results = await Promise.allSettled(sending.map((p) => deps.broker.publish(p.topic, p.json)));
  const at = deps.clock();
  const published = sending.filter((_, i) => results[i]!.status === 'fulfilled').map((p) => p.item.id);
  const failed = sending.filter((_, i) => results[i]!.status === 'rejected').map((p) => p.item.id);
  if (published.length > 0) await deps.outbox.finish(published, 'published', at);
  if (failed.length > 0) {
    await deps.outbox.release(failed);
    const reason = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')!.reason;
    deps.logger.warn('WIS2 notifications: the broker did not take them, trying again later', {
      waiting: failed.length,
      reason: messageOf(reason),
    });
    return 'failed';
  }
  return 'busy';
}

/** What to do with a row: its message, or why it is dropped or must wait. */
async function prepare(deps: PublisherDeps, item: OutboxItem): Promise<Prepared> {
  if (item.destinationData === null) return { item, drop: 'dropped: the destination was deleted' };
  const cache = item.origin && globalCacheOf(item.destinationData);
  if (item.origin && cache) return prepareCached(deps, item, item.origin, cache);
  const settings = wis2Settings(item.destinationData);
  if (settings === null) return { item, drop: 'dropped: the destination has no wis2.topic any more' };
  if ('invalid' in settings) {
    deps.logger.warn('WIS2 notification dropped', { destination: item.destination, reason: settings.invalid });
    return { item, drop: `dropped: ${settings.invalid}` };
  }
  const { file } = item;
  if (file === null || item.dataFileId === null) return { item, drop: 'dropped: the destination is no Global Cache' };
  if (item.kind !== 'deletion' && file.deletedAt !== null) {
    return { item, drop: 'dropped: the file was deleted before it was notified' };
  }
  if (item.openAccessUser === null && isCoreTopic(settings.topic)) return { item, hold: CORE_HOLD };
  const plainHref = portalFileUrl(deps.portalOrigin, item, item.openAccessUser);
  if (plainHref === null) return { item, drop: 'dropped: the path has a segment the portal does not show' };
  // A retrieved file is announced as its stored copy: the link names that version, which keeps serving
  // the bytes announced after an update. A deletion links to the path, whose file is gone.
  const { stored } = file;
  const version = item.kind === 'deletion' ? null : stored;
  const href = version === null ? plainHref : versionUrl(plainHref, version.key);

  let sha512 = version?.sha512 ?? file.sha512;
  if (sha512 === null) {
    try {
      sha512 = await deps.sha512(file.source, file.size);
      await deps.outbox.rememberSha512(item.dataFileId, item.id, sha512);
    } catch (e) {
      // A deleted file's source may be gone: its deletion is told without the digest.
      if (item.kind !== 'deletion') return { item, postpone: `the source could not be read: ${messageOf(e)}` };
    }
  }
  const built = buildMessage({
    id: item.messageId,
    kind: item.kind,
    file: {
      destination: item.destination,
      target: item.target,
      size: version?.size ?? file.size,
      modifiedAt: file.registeredAt,
      dataTime: dataTimeOf(file.metadata),
      sha512,
    },
    href,
    authenticated: item.openAccessUser === null,
    pubtime: deps.clock(),
    geometry: settings.geometry,
    metadataId: settings.metadataId,
  });
  if ('refused' in built) {
    deps.logger.warn('WIS2 notification dropped', {
      destination: item.destination,
      dataFileId: item.dataFileId,
      reason: built.refused,
    });
    return { item, drop: `dropped: ${built.refused}` };
  }
  return { item, topic: settings.topic, json: built.json };
}

/**
 * A Global Cache's republication: the message received, under `cache/a/wis2/…`, linking to the stored copy of its
 * data (the version, so that its digest stays true after an update), or to nothing of the cache's when the data
 * is not kept (`cache: false`, no file).
 */
function prepareCached(deps: PublisherDeps, item: OutboxItem, origin: ReceivedMessage, cache: string): Prepared {
  const topic = cacheTopic(origin.topic);
  if (topic === null) return { item, drop: `dropped: ${origin.topic} is no origin/a/wis2 or cache/a/wis2 topic` };
  let cached: CachedCopy | null = null;
  if (item.file !== null && item.openAccessUser === null && isCoreTopic(topic)) return { item, hold: CORE_HOLD };
  if (item.file !== null) {
    const href = portalFileUrl(deps.portalOrigin, item, item.openAccessUser);
    if (href === null) return { item, drop: 'dropped: the path has a segment the portal does not show' };
    const authenticated = item.openAccessUser === null;
    if (item.kind === 'deletion') cached = { cache, href, authenticated, copy: null };
    else {
      const { stored, deletedAt } = item.file;
      if (deletedAt !== null) return { item, drop: 'dropped: the file was deleted before it was republished' };
      if (stored === null) return { item, drop: 'dropped: the data was not kept (its retrieval failed)' };
      cached = { cache, href: versionUrl(href, stored.key), authenticated, copy: stored };
    }
  }
  const built = cacheMessage(origin.message, item.messageId, cached);
  if ('refused' in built) return { item, drop: `dropped: ${built.refused}` };
  return { item, topic, json: built.json };
}
