import type { Stats } from 'ssh2';
import { messageOf } from '../../core/common/errors.ts';
import { LeaseLapsed } from '../../core/dissemination/abort-reasons.ts';
import type { RemoteFiles } from '../../core/dissemination/deliver.ts';
import type { AttemptFence } from '../../core/dissemination/methods.ts';
import type { SftpSession } from './sftp-session.ts';

/** SFTP status codes (draft-ietf-secsh-filexfer-02) that the steps below tell apart. */
const NO_SUCH_FILE = 2;

/** How the write path pipelines: requests of `chunkBytes`, at most `windowBytes` unanswered. */
export interface WriteTuning {
  chunkBytes: number;
  windowBytes: number;
}

/**
 * OpenSSH's sftp keeps 64 requests of 32 KiB in flight; requests as large as OpenSSH accepts
 * (255 KiB) cost less JavaScript per byte, and 4 MiB covers its 2 MiB channel window.
 */
export const DEFAULT_TUNING: WriteTuning = { chunkBytes: 256 * 1024, windowBytes: 4 * 1024 * 1024 };

/** After an abort, cleanup gets this long before the session is dropped anyway. */
const CLEANUP_AFTER_ABORT_MS = 1_000;

type SftpError = Error & { code?: number };
type Callback<T> = (error: SftpError | null | undefined, value: T) => void;

export interface SftpRemote extends RemoteFiles {
  chmod(path: string, mode: number): Promise<void>;
  /** Stops listening to the signal; the session outlives the remote. */
  dispose(): void;
}

/**
 * The host's files over one SFTP session, for one send: every request gives up when the signal
 * aborts or the connection goes away, so that a stalled server never holds a send. With the
 * attempt's fence, no write request goes out once its lease may have lapsed.
 */
export function sftpRemote(
  session: SftpSession,
  signal: AbortSignal,
  tuning = DEFAULT_TUNING,
  attempt?: AttemptFence,
): SftpRemote {
  const { sftp } = session;
  // Waits in progress, each failed at once by an abort or a lost connection. Listeners are
  // removed as waits end: racing against long-lived promises would pile up their reactions.
  const abortable = new Set<(error: unknown) => void>();
  const losable = new Set<(error: unknown) => void>();
  const onAbort = () => {
    // Written before the pause that lapsed the lease, yet still in this process: dropped, not sent.
    if (signal.reason instanceof LeaseLapsed) session.drop(signal.reason);
    for (const stop of [...abortable]) stop(signal.reason);
  };
  signal.addEventListener('abort', onAbort, { once: true });
  const stopWatching = session.onClose((error) => {
    for (const stop of [...losable]) stop(error);
  });

  const settle = <T>(promise: Promise<T>, onAbortToo: boolean): Promise<T> => {
    const gone = session.lost() ?? (onAbortToo && signal.aborted ? signal.reason : null);
    if (gone) {
      promise.catch(() => undefined);
      return Promise.reject(gone);
    }
    return new Promise<T>((resolve, reject) => {
      const stop = (error: unknown) => {
        abortable.delete(stop);
        losable.delete(stop);
        reject(error);
      };
      if (onAbortToo) abortable.add(stop);
      losable.add(stop);
      promise.then(
        (value) => {
          abortable.delete(stop);
          losable.delete(stop);
          resolve(value);
        },
        (error) => stop(error),
      );
    });
  };
  /** Waits for `promise` unless the send is aborted or the connection lost first. */
  const guard = <T>(promise: Promise<T>): Promise<T> => settle(promise, true);
  /** One request, answered or failed when the connection goes away (not when aborted). */
  const request = <T>(start: (cb: Callback<T>) => void): Promise<T> => {
    const lost = session.lost();
    if (lost) return Promise.reject(lost);
    return settle(
      new Promise<T>((resolve, reject) => {
        start((error, value) => (error ? reject(error) : resolve(value)));
      }),
      false,
    );
  };
  const call = <T>(start: (cb: Callback<T>) => void): Promise<T> => {
    if (signal.aborted) return Promise.reject(signal.reason);
    return guard(request(start));
  };
  const failed = (what: string) => (error: unknown) => {
    throw error === signal.reason || error === session.lost() ? error : new Error(`${what}: ${messageOf(error)}`);
  };
  const stat = (path: string) =>
    call<Stats | null>((cb) =>
      sftp.stat(path, (error, stats) => (missing(error) ? cb(null, null) : cb(error as SftpError, stats ?? null))),
    );

  async function makeDirectories(directory: string): Promise<void> {
    const found = await stat(directory).catch(failed(`Cannot stat ${directory}`));
    if (found?.isDirectory()) return;
    if (found) throw new Error(`Cannot create directory ${directory}: a file has that name`);
    const slash = directory.replace(/\/+$/, '').lastIndexOf('/');
    if (slash > 0) await makeDirectories(directory.slice(0, slash));
    await call<void>((cb) => sftp.mkdir(directory, (error) => cb(error, undefined))).catch(async (error) => {
      // Another send may have created it meanwhile.
      if ((await stat(directory).catch(() => null))?.isDirectory()) return;
      failed(`Cannot create directory ${directory}`)(error);
    });
  }

  async function write(path: string, source: AsyncIterable<Uint8Array>): Promise<number> {
    const handle = await call<Buffer>((cb) => sftp.open(path, 'w', cb)).catch(
      failed(`Cannot open ${path} for writing`),
    );
    const pipeline = writePipeline(session, handle, path, tuning, attempt);
    const chunks = source[Symbol.asyncIterator]();
    let done = false;
    try {
      for (;;) {
        const next = await guard(chunks.next());
        if (next.done) break;
        await pipeline.push(next.value, guard);
      }
      const written = await pipeline.drain(guard);
      await call<void>((cb) => sftp.close(handle, (error) => cb(error, undefined))).catch(
        failed(`Cannot close ${path}`),
      );
      done = true;
      return written;
    } finally {
      if (!done) {
        // Neither waits: a stalled server would hold the send, and the session is dropped after.
        chunks.return?.().catch(() => undefined);
        if (!session.lost()) sftp.close(handle, () => undefined);
      }
    }
  }

  return {
    makeDirectories,
    write: (path, source) => write(path, source),
    async size(path) {
      const stats = await stat(path).catch(failed(`Cannot stat ${path}`));
      return stats ? stats.size : null;
    },
    async rename(from, to) {
      const renamed = failed(`Cannot rename ${from} to ${to}`);
      let offered = true;
      // Atomic replace when the server offers it (OpenSSH does); ssh2 throws when it was not announced.
      await call<void>((cb) => {
        try {
          sftp.ext_openssh_rename(from, to, (error) => cb(error, undefined));
        } catch {
          offered = false;
          cb(null, undefined);
        }
      }).catch(renamed);
      if (offered) return;
      // Plain SFTP rename refuses to replace: remove the earlier delivery first.
      await call<void>((cb) => sftp.unlink(to, (error) => cb(missing(error) ? null : error, undefined))).catch(renamed);
      await call<void>((cb) => sftp.rename(from, to, (error) => cb(error, undefined))).catch(renamed);
    },
    async remove(path) {
      const unlink = (cb: Callback<void>) => sftp.unlink(path, (error) => cb(missing(error) ? null : error, undefined));
      if (!signal.aborted) return call(unlink).catch(failed(`Cannot remove ${path}`));
      // Cleanup after an abort: bounded, as a stalled server may be why the send was aborted.
      const patience = new Promise<void>((resolve) => setTimeout(resolve, CLEANUP_AFTER_ABORT_MS).unref());
      await Promise.race([request(unlink), patience]).catch(failed(`Cannot remove ${path}`));
    },
    async chmod(path, mode) {
      await call<void>((cb) => sftp.chmod(path, mode, (error) => cb(error, undefined))).catch(
        failed(`Cannot change the mode of ${path}`),
      );
    },
    dispose() {
      signal.removeEventListener('abort', onAbort);
      stopWatching();
    },
  };
}

/**
 * Write requests of `chunkBytes` kept in flight up to the tuning's window. Small source chunks
 * are gathered into full requests: fewer, larger requests cost less per byte on both sides.
 * A request goes to ssh2 only once the SSH channel's window can take it: ssh2 would queue it and
 * send it by itself whenever the window opens, even after the send was aborted. A mover paused past
 * its lease stops its send as soon as it resumes, but the window the server opened meanwhile would
 * have let ssh2 write up to a window's worth more into a file another attempt now owns.
 */
function writePipeline(
  session: SftpSession,
  handle: Buffer,
  path: string,
  tuning: WriteTuning,
  attempt: AttemptFence | undefined,
) {
  const { sftp } = session;
  // ssh2 splits a larger request into ones it sends only after the previous is answered; its
  // limit (from the server's limits@openssh.com, else 32 KiB less overhead) is not public.
  const limit = (sftp as unknown as { _maxWriteLen?: number })._maxWriteLen ?? 31 * 1024;
  const chunkBytes = Math.min(tuning.chunkBytes, limit);
  let position = 0;
  let inFlight = 0;
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  // The source may reuse a chunk once it is consumed: what waits for a full request is copied.
  let staged: Buffer | null = null;
  let stagedBytes = 0;
  const settled = () => {
    const waiting = wake;
    wake = null;
    waiting?.();
  };
  const room = () => new Promise<void>((resolve) => (wake = resolve));

  // Answers wake the wait: the window opens as the server reads requests, before it answers them.
  const channelFull = (bytes: number) =>
    inFlight > 0 && (sftp as unknown as { outgoing: { window: number } }).outgoing.window < bytes + REQUEST_OVERHEAD;
  const send = async (piece: Buffer, guard: Guard) => {
    while ((inFlight >= tuning.windowBytes || channelFull(piece.byteLength)) && !failure) await guard(room());
    if (failure) throw failure;
    attempt?.throwIfLapsing();
    const at = position;
    position += piece.byteLength;
    inFlight += piece.byteLength;
    // ssh2 copies the piece into its packets before returning.
    const request = () =>
      sftp.write(handle, piece, 0, piece.byteLength, at, (error) => {
        inFlight -= piece.byteLength;
        if (error) failure ??= new Error(`Cannot write ${path} at byte ${at}: ${messageOf(error)}`);
        settled();
      });
    session.batch(request);
  };
  const flush = async (guard: Guard) => {
    if (!staged || stagedBytes === 0) return;
    // One staging buffer per file: ssh2 has copied it once `send` returns.
    await send(staged.subarray(0, stagedBytes), guard);
    stagedBytes = 0;
  };

  return {
    async push(chunk: Uint8Array, guard: Guard) {
      const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      let at = 0;
      while (at < bytes.byteLength) {
        if (stagedBytes === 0 && bytes.byteLength - at >= chunkBytes) {
          await send(bytes.subarray(at, at + chunkBytes), guard);
          at += chunkBytes;
          continue;
        }
        staged ??= Buffer.allocUnsafe(chunkBytes);
        const copied = bytes.copy(staged, stagedBytes, at, Math.min(bytes.byteLength, at + chunkBytes - stagedBytes));
        stagedBytes += copied;
        at += copied;
        if (stagedBytes === chunkBytes) await flush(guard);
      }
    },
    async drain(guard: Guard) {
      await flush(guard);
      while (inFlight > 0 && !failure) await guard(room());
      if (failure) throw failure;
      return position;
    },
  };
}

type Guard = <T>(promise: Promise<T>) => Promise<T>;

/** An SSH_FXP_WRITE's bytes besides its data (length, type, id, handle, offset), with room to spare. */
const REQUEST_OVERHEAD = 64;

const missing = (error: unknown) => (error as SftpError | undefined)?.code === NO_SUCH_FILE;
