import { badRequest, invalid, messageOf, notFound } from '../common/errors.ts';
import { errEvent } from '../common/events.ts';
import type { Args, Handlers } from '../common/operation.ts';
import { requireDestination } from '../destinations/lookups.ts';
import type { Ctx, Ports } from '../ports.ts';
import type { RetrievalSource } from '../retrieval/ports.ts';
import type { ReceivedMessage } from '../wis2/ports.ts';
import type { dataFileOperations } from './operations.ts';
import type { NewTransfer, RegisteredFile } from './ports.ts';
import { planPut } from './put-plan.ts';
import { isWorkerSource } from './r2-sources.ts';
import { duplicateHolds, registerClosure, registerOne } from './register.ts';
import { DURATION_EXPECTED, parseDuration, parseStart, START_EXPECTED, storable } from './schedule.ts';
import { forcesDuplicates } from './scheduler-options.ts';
import { shownSource } from './sources.ts';

const DEFAULT_LIFETIME_MS = 2 * 86_400_000;
const DEFAULT_PRIORITY = 99;
export const EXPIRED_MESSAGE = 'File not transferred before expiration';

/** `k=v,k2=v2` into ordered pairs. */
export function parseTransferMetadata(text: string | undefined): Array<[string, string]> {
  if (text === undefined) return [];
  return text
    .split(',')
    .filter((item) => item.trim() !== '')
    .map((item) => {
      const eq = item.indexOf('=');
      if (eq <= 0) throw invalid(`Malformed metadata: '${item}' (k=v expected)`);
      return [item.slice(0, eq).trim(), item.slice(eq + 1).trim()];
    });
}

/** The last path segment of a path or URL, without query or fragment. */
export function defaultTarget(source: string): string {
  const path = source.replace(/[?#].*$/, '').replace(/\/+$/, '');
  return decodeURIComponentSafe(path.slice(path.lastIndexOf('/') + 1));
}

function decodeURIComponentSafe(text: string) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * wire-decisions §10: an unknown destination is reported before any other failure, and
 * nothing is stored unless everything holds. A remote source is asked only for a destination
 * that exists. For a local one the destination is checked by the statement that registers
 * the file (one round trip), or, if something else fails first, before that failure is told.
 */
export async function put({ ctx, input }: Args<'datafilePut'>) {
  const { id } = await registerDataFile(ctx, input);
  return { id };
}

export type PutInput = Args<'datafilePut'>['input'];

/**
 * A file an Acquisition host listed: registered with its listed size, and retrieved from that host. A
 * destination that `sendsNowhere` (no Dissemination host) keeps it for its aliases and its portal users:
 * its own transfer is DONE once the file is retrieved, rather than failing the destination for want of a host.
 */
export interface AcquiredFile {
  hostId: number;
  size: number;
  time: Date | null;
  sendsNowhere: boolean;
  /** The WIS2 message that announced it (a subscription's): a destination in Global Cache mode republishes it. */
  notice?: ReceivedMessage;
}

/**
 * Registers a data file and its transfer as datafile/put does, for whoever registers it: the API's
 * caller, or the data portal's uploads (registeredBy `portal:<user>`, their own history comment).
 * `replaced` says a forced put gave an existing live transfer the new file.
 */
export async function registerDataFile(
  ctx: Ctx,
  input: PutInput,
  options: { comment?: string; registeredBy?: string; acquired?: AcquiredFile } = {},
): Promise<{ id: number; replaced: boolean }> {
  const { acquired } = options;
  if (acquired && ctx.ports.store === null) throw invalid('Acquired files are retrieved into the store: none is set');
  // Probing a remote source (an http(s) host, an R2 bucket) sends it a request.
  const remote = !acquired && isWorkerSource(input.source);
  if (remote) await requireDestination(ctx, input.destination);
  let transfer: NewTransfer;
  let file: RegisteredFile;
  try {
    transfer = newTransfer(ctx.ports.clock(), input);
    // Probed before anything is stored: a source that is not allowed or not there leaves no trace. A
    // listed file's size is its listing's, its source a path on its Acquisition host.
    const { size } = acquired ? acquired : await measureSource(ctx, input);
    const registeredBy = options.registeredBy ?? ctx.caller?.username ?? 'unknown';
    file = {
      source: input.source,
      size,
      registeredBy,
      comment: options.comment ?? `Registered by ${registeredBy}`,
      retrieve: ctx.ports.store !== null,
      acquiredFrom: acquired ? { hostId: acquired.hostId, time: acquired.time, notice: acquired.notice } : undefined,
    };
  } catch (e) {
    if (!remote) await requireDestination(ctx, input.destination);
    throw e;
  }

  const reach = await ctx.ports.repos.dataFiles.putReach(input.destination);
  if (!reach) throw notFound(`Destination ${input.destination} not found`);
  const planned = planPut(transfer, reach, file.size, ctx.ports.clock()).map((t) =>
    acquired?.sendsNowhere && t.destination === input.destination ? { ...t, status: 'DONE' as const } : t,
  );
  const holds = duplicateHolds(reach);
  // `scheduler.force = "yes"`: a duplicate put to the destination requeues, as with force=true.
  if (forcesDuplicates(reach.get(input.destination)!.data)) input = { ...input, force: true };
  if (planned.length === 1 && !holds.active(planned[0]!.destination)) {
    const { retrieving, ...outcome } = await registerOne(ctx, input, file, planned[0]!, options.comment);
    // A file on its way in this process has nothing for the others until it is stored (which wakes them).
    if (!retrieving) ctx.ports.wakeMovers();
    return outcome;
  }
  const outcome = await registerClosure(ctx, input, file, planned, holds.decide, options.comment);
  ctx.ports.wakeMovers();
  return outcome;
}

/**
 * The source's size: measured on the destination's Source host when it has one (the source is a
 * path there, as the reference reads it), else by the sources' rules (a local path, a URL, R2).
 */
async function measureSource(ctx: Ctx, input: PutInput): Promise<{ size: number }> {
  const hosts = ctx.ports.sourceHosts;
  if (!hosts) return ctx.ports.sources.probe(input.source);
  const shown = shownSource(input.source);
  let opened: RetrievalSource | null;
  try {
    opened = await hosts.open(input.destination, input.source, AbortSignal.timeout(SOURCE_HOST_PROBE_MS));
  } catch (e) {
    throw invalid(`Source ${shown} not reachable: ${messageOf(e)}`);
  }
  if (!opened) return ctx.ports.sources.probe(input.source);
  // Only the size is wanted now: the bytes are read at retrieval (or at each send).
  const stream = opened.stream as { destroy?: () => void; return?: () => Promise<unknown> };
  if (typeof stream.destroy === 'function') stream.destroy();
  else await stream.return?.().catch(() => undefined);
  if (opened.size === null) throw invalid(`Source ${shown} not reachable: its Source host does not tell its size`);
  return { size: opened.size };
}

const SOURCE_HOST_PROBE_MS = 30_000;

function newTransfer(now: Date, input: PutInput): NewTransfer {
  // The catalogue checked the forms; a relative start or an expiry can still fall outside the range of dates.
  const scheduledAt = input.at === undefined ? now : parseStart(input.at, now);
  if (scheduledAt === null || !storable(scheduledAt))
    throw badRequest(`Invalid value for parameter at: '${input.at}' (${START_EXPECTED})`);
  const lifetime = input.lifetime === undefined ? DEFAULT_LIFETIME_MS : parseDuration(input.lifetime);
  const expiresAt = new Date(scheduledAt.getTime() + (lifetime ?? Number.NaN));
  if (Number.isNaN(expiresAt.getTime()) || !storable(expiresAt)) {
    throw badRequest(
      input.lifetime === undefined
        ? `Invalid value for parameter at: '${input.at}' (${START_EXPECTED})`
        : `Invalid value for parameter lifetime: '${input.lifetime}' (${DURATION_EXPECTED})`,
    );
  }
  if (expiresAt.getTime() <= now.getTime()) throw invalid(`Expiry time already passed: ${expiresAt.toISOString()}`);
  const target = input.target ?? defaultTarget(input.source);
  if (target === '') throw invalid(`No target name can be derived from source ${input.source}; give target`);
  return {
    destination: input.destination,
    target,
    uniqueName: input.uniquename ?? '',
    priority: input.priority ?? DEFAULT_PRIORITY,
    status: input.standby ? 'HOLD' : 'WAIT',
    standby: input.standby ?? false,
    scheduledAt,
    expiresAt,
    metadata: parseTransferMetadata(input.metadata),
  };
}

export async function size({ ctx, input }: Args<'datafileSize'>) {
  const file = await ctx.ports.repos.dataFiles.find(input.id);
  if (!file) throw notFound(`DataFile ${input.id} not found`);
  return { size: file.size };
}

export async function del({ ctx, input }: Args<'datafileDel'>) {
  const file = await ctx.ports.repos.dataFiles.find(input.id);
  if (!file) throw notFound(`DataFile ${input.id} not found`);
  if (file.deletedAt) throw invalid('Already deleted');
  const notices = await ctx.ports.repos.dataFiles.markDeleted(input.id, ctx.ports.clock());
  // The WIS2 publisher listens as the movers do: its deletion notices go out now, not at its next poll.
  if (notices > 0) ctx.ports.wakeMovers();
  return {};
}

/**
 * Fails transfers not done before their expiry, with an ERR event entry each, and announces the
 * deletion of the expired files that were announced over WIS2.
 */
export async function sweepExpired(ports: Ports): Promise<number> {
  const now = ports.clock();
  const expired = await ports.repos.dataFiles.expire(now, EXPIRED_MESSAGE);
  // An expired file leaves the portal: its WIS2 deletion goes out now.
  if ((await ports.repos.dataFiles.noticeExpired(now)) > 0) ports.wakeMovers();
  for (const e of expired) {
    ports.events.write(
      errEvent({
        at: now,
        transferId: e.transferId,
        destination: e.destination,
        destinationType: e.destinationType,
        fileName: e.target,
        fileSize: e.size,
        scheduledTime: e.scheduledAt,
        networkCode: e.network,
        message: EXPIRED_MESSAGE,
      }),
    );
  }
  return expired.length;
}

export const dataFileHandlers = {
  datafilePut: put,
  datafileSize: size,
  datafileDel: del,
} satisfies Handlers<typeof dataFileOperations>;
