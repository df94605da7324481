import { coalesced } from '../common/coalesced.ts';
import { messageOf } from '../common/errors.ts';
import { errEvent, retEvent } from '../common/events.ts';
import { shownSource } from '../data-files/sources.ts';
import type { SourceReader } from '../dissemination/send.ts';
import type { Ports } from '../ports.ts';
import type { ObjectStore } from '../store/ports.ts';
import { type Summing, summing } from './digests.ts';
import type {
  RetrievalClaim,
  RetrievalRepo,
  RetrievalSource,
  RetrievedTransfer,
  SourceHostOpener,
  StoredRecord,
} from './ports.ts';

export type { RetrievalSource, SourceHostOpener } from './ports.ts';

export interface RetrievalDeps {
  ports: Ports;
  repo: RetrievalRepo;
  store: ObjectStore;
  sources: SourceReader;
  sourceHosts?: SourceHostOpener;
  /** In-thread `summing` with ports.hashing unless the runtime offers better. */
  summing?: Summing;
  /** Records one stored copy at a time unless given a way to record several together (the retriever's). */
  record?: RecordStored;
  /** Told once a file's transfers are released: ports.wakeMovers unless given (see startRetriever). */
  released?: () => void;
}

/** Records a stored copy: the file's transfers released, or null when the retriever no longer holds it. */
export type RecordStored = (record: StoredRecord) => Promise<RetrievedTransfer[] | null>;

/** The most stored copies one statement records. */
const MOST_RECORDED_TOGETHER = 32;

/** Copies stored while a record is on its way are recorded together by the next (see coalesced). */
export const recordTogether = (repo: RetrievalRepo): RecordStored =>
  coalesced((records: StoredRecord[]) => repo.stored(records), MOST_RECORDED_TOGETHER);

const recordAlone =
  (repo: RetrievalRepo): RecordStored =>
  async (record) =>
    (await repo.stored([record]))[0] ?? null;

/** Failed retrievals are tried again at once a few times, then at most every 30 s, as the reference does. */
export const retryDelayMs = (tries: number) => (tries < IMMEDIATE_TRIES ? 0 : 30_000);
const IMMEDIATE_TRIES = 3;

/** The object of one attempt: attempts never share a key, so a stale one cannot overwrite a live one's. */
export const objectKeyOf = (claim: Pick<RetrievalClaim, 'dataFileId' | 'instance' | 'tries'>) =>
  `${Math.floor(claim.dataFileId / 1000)}/${claim.dataFileId}-${claim.instance}-${claim.tries}`;

/**
 * Retrieves one claimed file: streams its source into the store once, counting and hashing in the
 * same pass, then releases its transfers. The object is recorded only if this retriever still holds
 * the file; otherwise it is removed. Never throws.
 */
export async function retrieve(deps: RetrievalDeps, mover: string, claim: RetrievalClaim, signal: AbortSignal) {
  const { ports, repo, store } = deps;
  const startedAt = new Date();
  const key = objectKeyOf(claim);
  let written = false;
  let source: RetrievalSource['host'] = null;
  let opened: RetrievalSource | null = null;
  try {
    opened = await openSource(deps, claim, signal);
    source = opened.host;
    if (opened.size !== null && opened.size !== claim.size) {
      // Never read: closed here, or its file stays open until the garbage collector finds it.
      await opened.stream[Symbol.asyncIterator]().return?.();
      throw new Error(`Incorrect size: ${opened.size} bytes at the source, ${claim.size} registered`);
    }
    const summed = deps.summing ? deps.summing(opened.stream, claim.size) : summing(opened.stream, deps.ports.hashing);
    await store.write(key, summed.stream, signal, claim.size);
    written = true;
    const sums = await summed.sums();
    if (sums.size !== claim.size) {
      throw new Error(`Incorrect size: ${sums.size} bytes read, ${claim.size} registered`);
    }
    const comment = `Retrieved by DataMover=${mover} (${sums.size} bytes in ${Date.now() - startedAt.getTime()} ms)`;
    const record = deps.record ?? recordAlone(repo);
    const released = await record({ claim, mover, copy: { key, ...sums }, comment });
    if (!released) {
      await store.remove([key]);
      return 'lost' as const;
    }
    const finishTime = new Date();
    for (const t of released)
      ports.events.write(retLine(t, { startedAt, finishTime, mover, source, size: claim.size }));
    if (deps.released) deps.released();
    else ports.wakeMovers();
    return 'stored' as const;
  } catch (error) {
    if (opened) closeUnread(opened.stream);
    if (written) await store.remove([key]).catch(() => undefined);
    const reason = `Retrieval failed on DataMover=${mover} - ${reasonOf(error, signal)}`;
    const back = await repo.failed(claim, mover, reason, retryDelayMs(claim.tries)).catch((e: unknown) => {
      ports.logger.error('retrieval failure not recorded', { dataFileId: claim.dataFileId, reason: messageOf(e) });
      return null;
    });
    for (const t of back ?? []) ports.events.write(errLine(t, { startedAt, mover, size: claim.size, reason }));
    return 'failed' as const;
  }
}

async function openSource(deps: RetrievalDeps, claim: RetrievalClaim, signal: AbortSignal): Promise<RetrievalSource> {
  if (claim.acquiredFrom != null) {
    if (!deps.sourceHosts) throw new Error(`Acquisition host ${claim.acquiredFrom} cannot be read by this mover`);
    return deps.sourceHosts.openOn(claim.acquiredFrom, claim.source, signal);
  }
  // Most destinations name none: their files are read without a lookup of their Source host.
  const onHost =
    claim.sourceHostNamed === false ? null : await deps.sourceHosts?.open(claim.destination, claim.source, signal);
  if (onHost) return onHost;
  const { size, stream } = await deps.sources.open(claim.source, signal);
  return { size, stream, host: null };
}

/**
 * A source refused before it was read to its end (a size that differs) still holds its file or
 * its session to a Source host: a Node stream is destroyed, an iterator told to return.
 */
function closeUnread(stream: AsyncIterable<Uint8Array>) {
  const closable = stream as { destroy?: () => void; return?: () => Promise<unknown> };
  if (typeof closable.destroy === 'function') closable.destroy();
  else closable.return?.().catch(() => undefined);
}

/** What the operator reads: the reason of the abort when there was one (a lost lease, a stop), else the error's. */
function reasonOf(error: unknown, signal: AbortSignal) {
  const cause = signal.aborted ? signal.reason : error;
  return shownSource(messageOf(cause));
}

type LineContext = { startedAt: Date; mover: string; size: number };

const retLine = (t: RetrievedTransfer, c: LineContext & { finishTime: Date; source: RetrievalSource['host'] }) =>
  retEvent({
    at: c.finishTime,
    transferId: t.transferId,
    destination: t.destination,
    destinationType: t.destinationType,
    fileName: t.target,
    fileSize: c.size,
    scheduledTime: t.scheduledAt,
    startTime: c.startedAt,
    finishTime: c.finishTime,
    mover: c.mover,
    standby: t.status === 'HOLD',
    source: c.source,
  });

const errLine = (t: RetrievedTransfer, c: LineContext & { reason: string }) =>
  errEvent({
    at: new Date(),
    transferId: t.transferId,
    destination: t.destination,
    destinationType: t.destinationType,
    fileName: t.target,
    fileSize: c.size,
    scheduledTime: t.scheduledAt,
    networkCode: null,
    startTime: c.startedAt,
    duration: Date.now() - c.startedAt.getTime(),
    mover: c.mover,
    message: c.reason,
  });
