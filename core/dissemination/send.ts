import { messageOf } from '../common/errors.ts';
import { scrubSecrets } from '../common/scrub.ts';
import { revealSecretOptions, secretOptionValues } from '../hosts/secret-options.ts';
import type { Ports } from '../ports.ts';
import { openFileBytes } from '../store/file-bytes.ts';
import { StoredObjectMissing } from '../store/ports.ts';
import { MoverStopping, TakenAway } from './abort-reasons.ts';
import { endAttempt } from './attempts.ts';
import { claimTransfers, isLapsing, lapsed, type RunningSend, renewLeases } from './claims.ts';
import type { Delivered } from './deliver.ts';
import { refreshShownStatus } from './destination-status.ts';
import { deliveryFilter, type FilterCodecs } from './filters.ts';
import type { ConfirmAttempt, EndDelivered } from './grouped-ends.ts';
import { type MethodName, methodOptions, splitHostPort } from './method-options.ts';
import {
  attemptFence,
  type HostConnection,
  type OutgoingFile,
  type SessionLedger,
  type TransferMethods,
} from './methods.ts';
import type { Attempt } from './outcome.ts';
import type { ClaimedTransfer, DisseminationHost, DueDestination } from './ports.ts';
import { progressWatch } from './progress-watch.ts';
import { type Spool, sendSpooled } from './spooled-filter.ts';
import type { EngineStats } from './stats.ts';

/** Bytes `start` to `end` of a source, both included. */
export interface SourceRange {
  start: number;
  end: number;
}

/**
 * Reads a data file's source at send time (a local path under the allowed roots, or an allowed URL).
 * `size` is always the whole source's, to compare with the registered size; with a `range` (the
 * portal's downloads) the stream gives only those bytes. Aborting `signal` closes the source.
 */
export interface SourceReader {
  open(
    source: string,
    signal: AbortSignal,
    range?: SourceRange,
  ): Promise<{ size: number; stream: AsyncIterable<Uint8Array> }>;
}

/** What sending a claimed transfer needs, wherever the claim was made (a Node mover, a Worker). */
export interface SendDeps {
  ports: Ports;
  methods: TransferMethods;
  sources: SourceReader;
  stats?: EngineStats;
  /** The compressors of the host's `filterName`; without them a host with a filter cannot be sent to. */
  filters?: FilterCodecs;
  /** Where a filter's output waits for its size, for the methods that announce it first; without it they take no filter. */
  spool?: Spool;
  /** Where the methods tell of the sessions they keep open, for other movers to count (see host-sessions.ts). */
  sessions?: SessionLedger;
  /** Ends delivered files' attempts, several in one transaction (groupedEnds); each alone without it. */
  endDelivered?: EndDelivered;
  /** Confirms attempts before their rename, several in one statement (groupedConfirms); each alone without it. */
  confirmAttempt?: ConfirmAttempt;
}

/**
 * Sends one claimed transfer through its host's method with no transaction open, and ends the
 * attempt: DONE, or RETR under the ring's rules. Never throws; answers how it ended.
 */
export async function sendClaimed(
  deps: SendDeps,
  mover: string,
  transfer: ClaimedTransfer,
  destination: DueDestination,
  host: DisseminationHost,
  signal: AbortSignal,
  leaseMs: number,
  lapsing: () => boolean = () => false,
): Promise<'delivered' | 'failed' | 'lost'> {
  const { ports } = deps;
  const protocol = host.module ?? 'none';
  const attempt: Attempt = { mover, transfer, destination, host, protocol };
  let secrets: string[] = [];
  // Closes the source however the send ends: a method that failed before reading it, or one that
  // reads none (portal), must not leave its file or connection open.
  const release = new AbortController();
  // Why the stored copy cannot be sent, when that is why the send failed (not the method or the host).
  let lostCopy: string | null = null;
  try {
    const method = deps.methods[protocol as MethodName];
    if (!method) throw new Error(`Transfer method ${protocol} is not available on DataMover=${mover}`);
    const opened = await connectionTo(ports, host, protocol as MethodName, deps.sessions);
    const connection = opened.connection;
    secrets = opened.secrets;
    const watch = attemptWatch(signal, connection.options);
    const attemptSignal = watch.signal;
    attemptSignal.addEventListener('abort', () => release.abort(attemptSignal.reason), { once: true });
    const source = await openFileBytes(ports.store, deps.sources, transfer, release.signal).catch((error) => {
      if (error instanceof StoredObjectMissing) lostCopy = error.message;
      throw error;
    });
    const { stored, objectKey } = transfer;
    if (stored && objectKey !== null && source.size !== stored.size) {
      lostCopy = `Stored object ${objectKey} has ${source.size} bytes, ${stored.size} stored`;
      throw new Error(lostCopy);
    }
    if (source.size !== transfer.size) {
      throw new Error(`Source changed size: ${source.size} bytes now, ${transfer.size} registered`);
    }
    const key = { id: transfer.id, attempt: transfer.attempt };
    const fence = attemptFence(
      key.id,
      key.attempt,
      async () => {
        // From when it is asked for, not sent: an answer shared with others is judged no later than alone.
        const askedAt = performance.now();
        const kept = deps.confirmAttempt
          ? await deps.confirmAttempt(key)
          : (await renewLeases(ports, mover, leaseMs, [key])).length > 0;
        if (!kept) throw new TakenAway(`Transfer ${key.id} was taken away from ${mover}`);
        // An answer taken up late (the process paused meanwhile) no longer proves the transfer is ours.
        if (performance.now() - askedAt >= (leaseMs * 3) / 4) throw lapsed(key, mover);
      },
      () => {
        if (lapsing()) throw lapsed(key, mover);
      },
    );
    const { spool } = deps;
    const filter = deliveryFilter(deps.filters, protocol, host, connection.options.filter, transfer, !!spool);
    // The stored copy's MD5 is sent as it was computed when retrieved; its bytes are still counted.
    const md5 = stored && objectKey !== null ? stored.md5 : null;
    const file = { target: transfer.target, size: transfer.size, attempt: fence, filter, md5 };
    const bytes =
      stored && objectKey !== null
        ? heldToSize(source.stream, stored.size, objectKey, (reason) => {
            lostCopy = reason;
          })
        : source.stream;
    const send = (outgoing: OutgoingFile, stream: AsyncIterable<Uint8Array>) =>
      method.send(connection, outgoing, watch.watched(stream), attemptSignal);
    const delivered = await (filter?.spooled && spool
      ? sendSpooled(spool, { ...file, filter }, watch.watched(bytes), attemptSignal, send, deps.ports.hashing)
      : send(file, bytes)
    ).finally(watch.dispose);
    if (!(await recordDelivered(deps, attempt, delivered, signal))) return 'lost';
    deps.stats?.delivered(host.hostId, delivered.sent);
    return 'delivered';
  } catch (error) {
    const cause = signal.aborted ? signal.reason : error;
    if (cause instanceof TakenAway) {
      // Usually the stop, delete or reclaim wrote what happened and this fenced finish changes
      // nothing; an attempt still this mover's is requeued rather than left in EXEC.
      const failure = { kind: 'failed' as const, message: cause.message, sent: 0, counts: false };
      const owned = await endAttempt(ports, attempt, failure).catch(() => false);
      return owned ? 'failed' : 'lost';
    }
    if (lostCopy !== null && !(cause instanceof MoverStopping)) return await refetchLost(deps, attempt, lostCopy);
    const message = cause instanceof MoverStopping ? cause.message : failureMessage(cause, secrets);
    const counts = !(cause instanceof MoverStopping);
    if (counts) deps.stats?.failed(host.hostId);
    await endAttempt(ports, attempt, { kind: 'failed', message, sent: 0, counts }).catch((e) =>
      ports.logger.error('could not end a failed attempt', { transfer: transfer.id, reason: messageOf(e) }),
    );
    return 'failed';
  } finally {
    release.abort();
  }
}

/**
 * The stored copy's bytes as they are read, held to the size stored: a truncated or grown object
 * fails the read, and `damaged` is told why, whatever the method makes of the error.
 */
async function* heldToSize(
  stream: AsyncIterable<Uint8Array>,
  size: number,
  key: string,
  damaged: (reason: string) => void,
): AsyncIterable<Uint8Array> {
  let read = 0;
  const fail = (bytes: string) => {
    const reason = `Stored object ${key} has ${bytes} bytes, ${size} stored`;
    damaged(reason);
    return new Error(reason);
  };
  for await (const chunk of stream) {
    read += chunk.byteLength;
    if (read > size) throw fail(`more than ${size}`);
    yield chunk;
  }
  if (read !== size) throw fail(String(read));
}

/**
 * A stored copy missing or damaged: the file is retrieved again while its source still has the
 * registered size (its transfers wait for it in SCHE); otherwise this attempt fails with both
 * reasons, as any failure does. Never throws.
 */
async function refetchLost(deps: SendDeps, attempt: Attempt, reason: string): Promise<'failed' | 'lost'> {
  const { ports } = deps;
  const { transfer, mover } = attempt;
  const check = new AbortController();
  let sourceGone: string | null = null;
  try {
    const source = await deps.sources.open(transfer.source, check.signal);
    if (source.size !== transfer.size) {
      sourceGone = `source ${transfer.source} has ${source.size} bytes now, ${transfer.size} registered`;
    }
  } catch (error) {
    sourceGone = messageOf(error);
  } finally {
    check.abort();
  }
  try {
    if (sourceGone === null && transfer.objectKey !== null) {
      const comment = `${reason}: retrieving the file again`;
      const lost = { dataFileId: transfer.dataFileId, objectKey: transfer.objectKey, reason: comment };
      if (await ports.repos.retrieval.refetch({ ...lost, transferId: transfer.id, attempt: transfer.attempt, mover })) {
        ports.logger.warn('stored copy lost; retrieving the file again', { transfer: transfer.id, reason });
        await refreshShownStatus(ports.repos.dissemination, attempt.destination.name, ports.clock());
        return 'failed';
      }
    }
    const message = failureMessage(sourceGone === null ? reason : `${reason}; ${sourceGone}`, []);
    deps.stats?.failed(attempt.host.hostId);
    const owned = await endAttempt(ports, attempt, { kind: 'failed', message, sent: 0, counts: true });
    return owned ? 'failed' : 'lost';
  } catch (error) {
    ports.logger.error('could not end a failed attempt', { transfer: transfer.id, reason: messageOf(error) });
    return 'failed';
  }
}

/**
 * A file is delivered whatever the database says next: its DONE is written again, a second, then
 * two, up to 30 s apart, until it is or the attempt is taken away (its lease lapsed meanwhile and
 * another attempt sends it again). A bookkeeping failure is never counted against the host.
 */
async function recordDelivered(deps: SendDeps, attempt: Attempt, delivered: Delivered, signal: AbortSignal) {
  const { ports } = deps;
  const result = { kind: 'delivered' as const, ...delivered };
  for (let wait = 1000; ; wait = Math.min(wait * 2, 30_000)) {
    try {
      return await (deps.endDelivered?.({ attempt, result }) ?? endAttempt(ports, attempt, result));
    } catch (error) {
      ports.logger.warn('could not record a delivered file; trying again', {
        transfer: attempt.transfer.id,
        reason: messageOf(error),
      });
      if (signal.aborted) return false;
      await new Promise((resolve) => setTimeout(resolve, wait));
      if (signal.aborted) return false;
    }
  }
}

/** A send started by `claimAndSend`: abort its controller to close it; `ended` says how it ended. */
export interface StartedSend extends RunningSend {
  ended: Promise<'delivered' | 'failed' | 'lost'>;
}

/**
 * Claims up to `wanted` due transfers of a destination for its ring's current host (one short
 * transaction, within both maxConnections) and starts sending each, as the Node mover and the
 * edge both do.
 */
export async function claimAndSend(
  deps: SendDeps,
  mover: string,
  destination: DueDestination,
  host: DisseminationHost,
  claim: {
    leaseMs: number;
    wanted: number;
    workerSourcesOnly?: boolean;
    /** Whether this mover was sending nothing to the destination before (see ClaimRequest.showSending). */
    firstSends?: boolean;
  },
): Promise<StartedSend[]> {
  const { ports } = deps;
  // Before the claim: its lease starts during it, and must not look younger than it is.
  const claimedAt = performance.now();
  const claimed = await claimTransfers(ports, {
    destination: destination.name,
    hostId: host.hostId,
    mover,
    destinationMax: destination.maxConnections,
    hostMax: host.maxConnections,
    leaseMs: claim.leaseMs,
    wanted: claim.wanted,
    workerSourcesOnly: claim.workerSourcesOnly,
    showSending: claim.firstSends,
  });
  const started = claimed.map((transfer) => {
    const controller = new AbortController();
    const key = { id: transfer.id, attempt: transfer.attempt };
    const running: RunningSend = { key, controller, renewedAt: claimedAt };
    // The beat renews `running` itself: the send judges its lease by the same renewals.
    const lapsing = () => isLapsing(running, claim.leaseMs);
    const ended = sendClaimed(deps, mover, transfer, destination, host, controller.signal, claim.leaseMs, lapsing);
    return Object.assign(running, { ended });
  });
  return started;
}

/**
 * The signal of one attempt (see progressWatch): aborted by the mover (a stop, a lost lease), by
 * `ectrans.putTimeOut`, or once the method has taken no byte of the source for
 * `ectrans.streamTimeout` (a link that stays open but moves nothing applies backpressure, so reads
 * stop too).
 */
function attemptWatch(mover: AbortSignal, options: { putTimeoutMs: number | null; streamTimeoutMs: number }) {
  const watch = progressWatch(mover, options);
  return {
    signal: watch.signal,
    async *watched(source: AsyncIterable<Uint8Array>) {
      for await (const chunk of source) {
        watch.moved();
        yield chunk;
      }
    },
    dispose: watch.clear,
  };
}

/** The longest failure message kept: a message is a reason, not a copy of what a server answered. */
export const MAX_FAILURE_MESSAGE = 1000;

/**
 * What a failed attempt says in its history, the ring's last error and its ERR line: the error's
 * message without the host's credentials, in any form a server may have echoed them (see
 * scrubSecrets), and cut to MAX_FAILURE_MESSAGE characters. Every method's failure passes here.
 */
export function failureMessage(error: unknown, secrets: readonly string[]): string {
  const message = scrubSecrets(messageOf(error), secrets);
  return message.length > MAX_FAILURE_MESSAGE ? `${message.slice(0, MAX_FAILURE_MESSAGE - 1)}…` : message;
}

/**
 * The host as its method reaches it, with the credentials unsealed for this attempt only (never
 * logged), and those credentials as failureMessage must scrub them: the password, the Basic
 * pair `login:password`, and the values of the secret options.
 */
export async function connectionTo(
  ports: Ports,
  host: DisseminationHost,
  method: MethodName,
  sessions?: SessionLedger,
) {
  const password = host.passwdSealed === null ? null : await ports.secrets.decrypt(host.passwdSealed);
  const data = await revealSecretOptions(host.data, ports.secrets);
  const connection: HostConnection = {
    hostId: host.hostId,
    hostname: splitHostPort(host.host).hostname,
    login: host.login,
    password,
    directory: host.dir,
    options: methodOptions(method, host.host, data),
    sessions,
  };
  const secrets = secretOptionValues(data);
  if (password !== null) secrets.push(password, `${host.login}:${password}`);
  return { connection, secrets };
}
