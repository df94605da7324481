import { messageOf } from '../common/errors.ts';
import type { Logger } from '../ports.ts';
import { buildMessage, portalFileUrl, versionUrl } from './message.ts';
import { wis2Settings } from './options.ts';
import type { OutboxItem, Sha512Reader, Wis2Broker, Wis2OutboxRepo } from './ports.ts';

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

type Prepared = { item: OutboxItem } & ({ topic: string; json: string } | { drop: string } | { postpone: string });

/**
 * Publishes the outbox's due rows, in order, until stopped: each message with QoS 1, marked
 * published only once the broker acknowledged it. When the broker can't be reached the claimed
 * rows are given back and the publisher waits (longer each time) before it tries again, from the
 * same oldest row: nothing is lost or reordered. No transaction is open while a message is sent.
 */
export function startWis2Publisher(deps: PublisherDeps, options: PublisherOptions = DEFAULT_PUBLISHER_OPTIONS) {
  let stopping = false;
  let woken = false;
  let interrupt: (() => void) | null = null;
  const rest = (ms: number, wakeable: boolean) =>
    new Promise<void>((resolve) => {
      if (stopping || (wakeable && woken)) {
        woken = false;
        return resolve();
      }
      const done = () => {
        clearTimeout(timer);
        interrupt = null;
        woken = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      interrupt = wakeable ? done : () => stopping && done();
    });

  let prunedAt = 0;
  const prune = async () => {
    const now = deps.clock().getTime();
    if (now - prunedAt < PRUNE_EVERY_MS) return;
    prunedAt = now;
    await deps.outbox.prune(new Date(now - KEPT_MS));
  };

  const loop = (async () => {
    let retryMs = options.firstRetryMs;
    while (!stopping) {
      let outcome: 'idle' | 'busy' | 'failed';
      try {
        outcome = await publishDue(deps, options);
      } catch (e) {
        deps.logger.warn('WIS2 notifications: the outbox could not be read', { reason: messageOf(e) });
        outcome = 'failed';
      }
      if (outcome === 'failed') {
        await rest(retryMs, false);
        retryMs = Math.min(retryMs * 2, options.maxRetryMs);
        continue;
      }
      retryMs = options.firstRetryMs;
      if (outcome === 'idle') {
        await prune().catch((e: unknown) =>
          deps.logger.warn('WIS2 notifications: old outbox rows could not be deleted', { reason: messageOf(e) }),
        );
        await rest(options.pollMs, true);
      }
    }
  })();

  return {
    wake() {
      woken = true;
      interrupt?.();
    },
    async stop() {
      stopping = true;
      interrupt?.();
      await loop;
    },
  } satisfies Wis2Publisher;
}

/** One claim's worth: 'idle' when nothing was due, 'failed' when the broker refused a message. */
async function publishDue(deps: PublisherDeps, options: PublisherOptions): Promise<'idle' | 'busy' | 'failed'> {
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
  const settings = wis2Settings(item.destinationData);
  if (settings === null) return { item, drop: 'dropped: the destination has no wis2.topic any more' };
  if ('invalid' in settings) {
    deps.logger.warn('WIS2 notification dropped', { destination: item.destination, reason: settings.invalid });
    return { item, drop: `dropped: ${settings.invalid}` };
  }
  if (item.kind !== 'deletion' && item.file.deletedAt !== null) {
    return { item, drop: 'dropped: the file was deleted before it was notified' };
  }
  const plainHref = portalFileUrl(deps.portalOrigin, item, item.openAccessUser);
  if (plainHref === null) return { item, drop: 'dropped: the path has a segment the portal does not show' };
  // A retrieved file is announced as its stored copy: the link names that version, which keeps serving
  // the bytes announced after an update. A deletion links to the path, whose file is gone.
  const { stored } = item.file;
  const version = item.kind === 'deletion' ? null : stored;
  const href = version === null ? plainHref : versionUrl(plainHref, version.key);

  let sha512 = version?.sha512 ?? item.file.sha512;
  if (sha512 === null) {
    try {
      sha512 = await deps.sha512(item.file.source, item.file.size);
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
      size: version?.size ?? item.file.size,
      modifiedAt: item.file.registeredAt,
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
