import { isServiceError, messageOf } from '../common/errors.ts';
import { registerDataFile } from '../data-files/handlers.ts';
import { parseDuration } from '../data-files/schedule.ts';
import type { Ctx } from '../ports.ts';
import { centreOf } from '../wis2/cache-message.ts';
import { globalCacheOf } from '../wis2/options.ts';
import type { ReceivedMessage } from '../wis2/ports.ts';
import { priorityOf } from './listing-lines.ts';
import type { AcquiredBefore, AcquisitionClaim, CacheCount } from './ports.ts';
import {
  type ContentDecoder,
  isRecommended,
  noticeName,
  type ReceivedNotice,
  readNotice,
  UnusableNotice,
} from './wis2-notice.ts';

/**
 * Where a subscription may download from: the names listed (any public one when none), private addresses
 * only if listed; and how much.
 */
export interface DownloadRules {
  hosts: string[];
  maxBytes: number;
}

/** What a WIS2 subscription needs from its runtime. */
export interface Wis2Intake {
  /** The WNM schema's errors for a message; null when it passes. */
  schemaErrors(message: unknown): string | null;
  decode: ContentDecoder;
  /** A link's bytes, under the rules; rejects with the reason (a private address, too large, a status). */
  download(href: string, rules: DownloadRules, signal: AbortSignal): Promise<Uint8Array>;
  /** The base64 digest of the bytes by a method of `crypto.createHash`. */
  digest(method: string, bytes: Uint8Array): string;
  /** Verified bytes kept for this process's retriever, which reads them rather than the link again. */
  verified: VerifiedCopies;
}

/** Bytes verified at a message's arrival, taken once by the retrieval of the file they were registered for. */
export interface VerifiedCopies {
  keep(hostId: number, href: string, bytes: Uint8Array): void;
  take(hostId: number, href: string): Uint8Array | null;
}

export interface IntakeContext {
  ctx: Ctx;
  intake: Wis2Intake;
  claim: AcquisitionClaim;
  options: Map<string, string>;
  rules: DownloadRules;
  signal: AbortSignal;
  /** The claim's destinations that are Global Caches, with their centre ids (see globalCachesOf). */
  caches: Map<string, string>;
}

/** The destinations of a claim that are Global Caches (`wis2.globalCache`), with their centre ids: read once a run. */
export function globalCachesOf(claim: AcquisitionClaim) {
  const caches = new Map<string, string>();
  for (const { name, data } of claim.destinations) {
    const cache = globalCacheOf(data);
    if (cache !== null) caches.set(name, cache);
  }
  return caches;
}

/**
 * One message of a subscription, checked and acted on: a new or updated file downloaded (or taken from the
 * message), verified against its length and digest, then registered for each destination unless an equal or
 * newer one is there; a deletion deletes it. A destination that is a Global Cache republishes it (its data
 * kept, or not when `cache` is false). Answers the line the run's output keeps; throws only what is not the
 * message's fault (the database down). `redelivered`: the broker sends it again (MQTT's DUP), the one before
 * not acknowledged, so a take of it that never ended (its process died) does not make it a duplicate.
 */
export async function takeMessage(
  c: IntakeContext,
  topic: string,
  payload: Uint8Array,
  redelivered = false,
): Promise<TakenMessage> {
  let message: unknown;
  try {
    message = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    return { line: 'dropped: not JSON', kind: 'invalid' };
  }
  const errors = c.intake.schemaErrors(message);
  if (errors) return { line: `dropped: not a WIS2 Notification Message (${errors})`, kind: 'invalid' };
  let notice: ReceivedNotice;
  try {
    notice = readNotice(message as Record<string, unknown>, c.intake.decode);
  } catch (error) {
    if (error instanceof UnusableNotice) return { line: `dropped: ${error.message}`, kind: 'invalid' };
    throw error;
  }
  const about = `${notice.dataId} (message ${notice.id})`;
  if (isRecommended(topic)) return { line: `${about}: dropped: recommended data`, kind: 'recommended' };
  const { acquisition } = c.ctx.ports.repos;
  const fresh: string[] = [];
  for (const { name } of c.claim.destinations) {
    if (await acquisition.firstSeen(name, notice.id, redelivered)) fresh.push(name);
  }
  if (fresh.length === 0) return { line: `${about}: dropped: message already received`, kind: 'duplicate' };
  const origin = { topic, message: message as Record<string, unknown> };
  const taken = await actOn(c, notice, origin, fresh);
  await acquisition.tookMessage(fresh, notice.id);
  return { ...taken, line: `${about}: ${taken.line}` };
}

async function actOn(
  c: IntakeContext,
  notice: ReceivedNotice,
  origin: ReceivedMessage,
  fresh: string[],
): Promise<TakenMessage> {
  const caches = cachesAmong(c, fresh);
  if (notice.kind === 'deletion')
    return { line: await deleteNotified(c, notice, origin, fresh, caches), kind: 'taken' };
  const passed: string[] = [];
  const keeping: Array<{ name: string; before: AcquiredBefore | undefined }> = [];
  for (const name of fresh) {
    if (caches.has(name) && !notice.cache) {
      passed.push(await passOn(c, notice, origin, name));
      continue;
    }
    // A resend, another cache's copy, or a message an earlier one superseded: data_id with pubtime decides
    // (newer replaces), before anything is downloaded.
    const before = await acquiredBefore(c, notice, name);
    if (before?.time && before.time.getTime() >= notice.pubtime.getTime()) {
      passed.push(`${name}: not newer than DataFileId=${before.dataFileId}`);
    } else keeping.push({ name, before });
  }
  const counts = (outcome: CacheCount['outcome'], bytes = 0) =>
    [...caches.values()].map((reportBy) => ({
      reportBy,
      centre: centreOf(origin.topic),
      outcome,
      bytes,
      at: c.ctx.ports.clock(),
    }));
  if (keeping.length === 0) {
    const republished = caches.size > 0 && !notice.cache;
    return republished
      ? { line: passed.join('; '), kind: 'taken', cache: counts('no_cache') }
      : { line: passed.join('; '), kind: 'duplicate' };
  }
  const inline = notice.content !== null;
  let bytes: Uint8Array;
  try {
    bytes = notice.content ?? (await c.intake.download(notice.href, c.rules, c.signal));
    verify(c.intake, notice, bytes);
  } catch (error) {
    c.signal.throwIfAborted();
    const unverified = error instanceof Unverified;
    return {
      line: [...passed, `dropped: ${messageOf(error)}`].join('; '),
      kind: unverified ? 'unverified' : 'undownloaded',
      cache: counts(unverified ? 'integrity_failed' : 'error'),
    };
  }
  const outcomes = [...passed];
  for (const { name, before } of keeping) {
    outcomes.push(await registerNotified(c, notice, origin, bytes, name, before, caches.has(name)));
  }
  return { line: outcomes.join('; '), kind: 'taken', cache: counts(inline ? 'inline' : 'downloaded', bytes.length) };
}

/** The Global Caches among `names`, with their centre ids. */
const cachesAmong = (c: IntakeContext, names: string[]) =>
  new Map([...c.caches].filter(([name]) => names.includes(name)));

/** The key of a message's data for a Global Cache: other caches republish it with ids of their own. */
const dataKeyOf = (notice: ReceivedNotice) => `data:${notice.dataId}@${notice.pubtime.toISOString()}`;

/** A message whose data a Global Cache does not keep (`cache: false`): republished as it is, once. */
async function passOn(c: IntakeContext, notice: ReceivedNotice, origin: ReceivedMessage, destination: string) {
  const { ctx } = c;
  const queued = await ctx.ports.repos.acquisition.republish(
    destination,
    origin,
    dataKeyOf(notice),
    notice.kind,
    null,
    ctx.ports.clock(),
  );
  ctx.ports.wakeMovers();
  return `${destination}: ${queued ? 'republished without its data (cache: false)' : 'already republished'}`;
}

/**
 * A message's line in the run's output, and how it ended: `taken` (acted on), `invalid`, `duplicate`,
 * `recommended`, `unverified` (its length or digest did not match) or `undownloaded`.
 */
export interface TakenMessage {
  line: string;
  kind: 'taken' | 'invalid' | 'duplicate' | 'recommended' | 'unverified' | 'undownloaded';
  /** What each Global Cache among the destinations did with the data. */
  cache?: CacheCount[];
}

class Unverified extends Error {}

function verify(intake: Wis2Intake, notice: ReceivedNotice, bytes: Uint8Array) {
  if (notice.length !== null && notice.length !== bytes.length) {
    throw new Unverified(`length ${bytes.length} bytes, the link says ${notice.length}`);
  }
  if (notice.integrity && intake.digest(notice.integrity.method, bytes) !== notice.integrity.value) {
    throw new Unverified(`integrity: the ${notice.integrity.method} digest does not match`);
  }
}

/**
 * The key a notified file is known by: its name (or `acquisition.target`) and its data id as unique name. A Global
 * Cache names it by its data id, whichever link (the centre's, another cache's) brought it.
 */
function keyOf(c: IntakeContext, notice: ReceivedNotice, destination: string) {
  const name = c.caches.has(destination) ? notice.dataId : noticeName(notice);
  const template = c.options.get('acquisition.target') ?? '$target';
  const target = template.replace(/\$(target|name|destination)\b/g, (_, token: string) =>
    token === 'destination' ? destination : name,
  );
  return { target, uniqueName: notice.dataId };
}

/** A Global Cache keeps the data at least this long (WIS2 Guide), whatever `acquisition.lifetime` says. */
const CACHE_LIFETIME_MS = 86_400_000;

async function registerNotified(
  c: IntakeContext,
  notice: ReceivedNotice,
  origin: ReceivedMessage,
  bytes: Uint8Array,
  destination: string,
  before: AcquiredBefore | undefined,
  caches: boolean,
) {
  const { ctx, claim } = c;
  const key = keyOf(c, notice, destination);
  const hostId = Number(claim.host.hostId);
  const sendsNowhere = claim.destinations.find((d) => d.name === destination)?.sendsNowhere ?? false;
  c.intake.verified.keep(hostId, notice.href, bytes);
  try {
    const { id, replaced } = await registerDataFile(
      ctx,
      {
        destination,
        source: notice.href,
        target: key.target,
        uniquename: key.uniqueName,
        priority: priorityOf(c.options.get('acquisition.priority')),
        lifetime: lifetimeOf(c.options.get('acquisition.lifetime'), caches),
        force: before !== undefined,
      },
      {
        registeredBy: `wis2:${hostId}`,
        comment: `Notified by WIS2 message ${notice.id}`,
        acquired: { hostId, size: bytes.length, time: notice.pubtime, sendsNowhere, notice: origin },
      },
    );
    return `${destination}: ${replaced ? 'updated' : 'registered'} DataFileId=${id}`;
  } catch (error) {
    if (!isServiceError(error)) throw error;
    return `${destination}: not registered: ${error.message}`;
  }
}

const acquiredBefore = async (c: IntakeContext, notice: ReceivedNotice, destination: string) =>
  (await c.ctx.ports.repos.acquisition.acquiredBefore(destination, [keyOf(c, notice, destination)])).values().next()
    .value;

/** A deletion: the file deleted; a Global Cache republishes the message, its link the cache's path, first. */
async function deleteNotified(
  c: IntakeContext,
  notice: ReceivedNotice,
  origin: ReceivedMessage,
  destinations: string[],
  caches: Map<string, string>,
) {
  const { repos, clock } = c.ctx.ports;
  const outcomes = [];
  for (const destination of destinations) {
    const before = await acquiredBefore(c, notice, destination);
    if (!before) {
      outcomes.push(`${destination}: nothing to delete`);
      continue;
    }
    if (caches.has(destination)) {
      const target = keyOf(c, notice, destination).target;
      const file = { dataFileId: before.dataFileId, transferId: before.transferId, target };
      await repos.acquisition.republish(destination, origin, dataKeyOf(notice), 'deletion', file, clock());
    }
    await repos.dataFiles.markDeleted(before.dataFileId, clock());
    outcomes.push(`${destination}: deleted DataFileId=${before.dataFileId}`);
  }
  c.ctx.ports.wakeMovers();
  return outcomes.join('; ');
}

function lifetimeOf(option: string | undefined, caches: boolean) {
  if (!caches) return option;
  const ms = option === undefined ? null : parseDuration(option);
  return ms !== null && ms >= CACHE_LIFETIME_MS ? option : `${CACHE_LIFETIME_MS / 1000}s`;
}
