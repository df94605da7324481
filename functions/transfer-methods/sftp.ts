import { finished } from 'node:stream';
import type { ListedEntry } from '../../core/acquisition/selection.ts';
import { messageOf } from '../../core/common/errors.ts';
import { type Delivered, deliverFile } from '../../core/dissemination/deliver.ts';
import {
  deliveryFor,
  type HostConnection,
  type OutgoingFile,
  type TransferMethod,
} from '../../core/dissemination/methods.ts';
import { checkRemoteFiles } from '../../core/host-checks/remote-check.ts';
import { nodeHashing } from '../node/hashing.ts';
import { idleSessions } from './idle-sessions.ts';
import { DEFAULT_TUNING, sftpRemote, type WriteTuning } from './sftp-remote.ts';
import { connect, credentialsOf, type SftpSession, sessionKey } from './sftp-session.ts';

export interface SftpMethodOptions {
  /** How long an idle session waits for the next send to its host before it is closed. */
  idleMs?: number;
  /** Idle sessions kept per host, login and credentials; more are closed at once. */
  maxIdlePerHost?: number;
  tuning?: WriteTuning;
}

export interface SftpMethod extends TransferMethod {
  /** Connections opened and sessions reused so far, and how many sessions are idle now. */
  stats(): { connections: number; reused: number; idle: number };
}

/**
 * The `sftp` method: each send writes its file over its own SFTP session, under a temporary name
 * then renamed into place (`deliverFile`). Sessions that delivered are kept idle for a while and
 * reused by the next send to the same host and login, which saves the SSH handshake and login
 * on small files; one that failed or was aborted is closed, never reused.
 */
export function sftpMethod(options: SftpMethodOptions = {}): SftpMethod {
  const tuning = options.tuning ?? DEFAULT_TUNING;
  const idle = idleSessions<SftpSession>({
    idleMs: options.idleMs ?? 5_000,
    maxPerKey: options.maxIdlePerHost ?? 8,
    alive: (session) => !session.lost(),
    end: (session) => session.end(),
  });
  let connections = 0;
  let reused = 0;
  /** An idle session to the host and login, else a new one: each send, read and listing starts here. */
  const sessionFor = async (host: HostConnection, signal: AbortSignal) => {
    signal.throwIfAborted();
    const credentials = credentialsOf(host);
    const acquired = await idle.acquire(sessionKey(host, credentials), host, () =>
      connect(host, credentials, signal).catch((error) => {
        throw redacted(error, host.password);
      }),
    );
    if (acquired.reused) reused++;
    else connections++;
    return acquired.session;
  };

  return {
    async send(host: HostConnection, file: OutgoingFile, source: AsyncIterable<Uint8Array>, signal: AbortSignal) {
      const mode = readMode(host.options.raw.get('chmod'));
      const session = await sessionFor(host, signal);
      const put = withTimeout(signal, host.options.putTimeoutMs);
      const remote = sftpRemote(session, put.signal, tuning, file.attempt);
      let delivered: Delivered | null = null;
      try {
        const steps = {
          // As the reference: chmod the file and its sidecar, then run `sftp.execCmd`.
          afterPlaced: async (finalPath: string, sidecarPath: string | null) => {
            if (mode !== null) {
              await remote.chmod(finalPath, mode);
              if (sidecarPath !== null) await remote.chmod(sidecarPath, mode);
            }
            await runExec(session, host, finalPath, put.signal);
          },
        };
        delivered = await deliverFile(remote, deliveryFor(host, file, steps), source, put.signal, nodeHashing);
        return delivered;
      } catch (error) {
        delivered = null;
        throw redacted(error, host.password);
      } finally {
        remote.dispose();
        put.dispose();
        // A failed send ends only once its session has: until then the server may still hold the
        // file open, and the next attempt, on another session, would make it two writers. An
        // aborted one is reset at once rather than sending its buffered writes before the goodbye.
        if (put.signal.aborted) session.drop(new Error('Send aborted'));
        await idle.release(session, delivered !== null && !put.signal.aborted);
      }
    },
    async fetch(host: HostConnection, path: string, signal: AbortSignal) {
      const session = await sessionFor(host, signal);
      try {
        const size = await sizeOf(session, path, signal);
        return { size, stream: readStream(session, path, signal, (clean) => void idle.release(session, clean)) };
      } catch (error) {
        await idle.release(session, !signal.aborted && session.lost() === null);
        throw redacted(error, host.password);
      }
    },
    async list(host: HostConnection, directory: string, signal: AbortSignal) {
      const session = await sessionFor(host, signal);
      let clean = false;
      try {
        const entries = await entriesOf(session, directory, signal);
        clean = true;
        return entries;
      } catch (error) {
        clean = !signal.aborted && session.lost() === null;
        throw redacted(error, host.password);
      } finally {
        await idle.release(session, clean);
      }
    },
    async check(host, file, signal) {
      signal.throwIfAborted();
      // A connection of its own: a check proves the host takes a new login now.
      const session = await connect(host, credentialsOf(host), signal).catch((error) => {
        throw redacted(error, host.password);
      });
      const remote = sftpRemote(session, signal, tuning);
      try {
        return await checkRemoteFiles(remote, host.directory, file, signal);
      } catch (error) {
        throw redacted(error, host.password);
      } finally {
        remote.dispose();
        // A check cut at its timeout does not wait for a server that stopped answering to end the session.
        if (signal.aborted) session.drop(new Error('Host check aborted'));
        else await session.end();
      }
    },
    async close() {
      await idle.close();
    },
    stats: () => ({ connections, reused, idle: idle.size() }),
  };
}

/** The size of a regular file on the server; fails with the reason when there is none at `path`. */
function sizeOf(session: SftpSession, path: string, signal: AbortSignal): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const stop = () => reject(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    const off = session.onClose(reject);
    session.sftp.stat(path, (error, stats) => {
      off();
      signal.removeEventListener('abort', stop);
      const code = (error as { code?: number } | undefined)?.code;
      if (error) reject(new Error(code === 2 ? 'No such file' : `Cannot be read (${error.message})`));
      else if (!stats.isFile()) reject(new Error('Not a regular file'));
      else resolve(stats.size);
    });
  });
}

/** A directory's entries as the server lists them (READDIR: a link is reported as a link, not followed). */
function entriesOf(session: SftpSession, directory: string, signal: AbortSignal): Promise<ListedEntry[]> {
  return new Promise<ListedEntry[]>((resolve, reject) => {
    const stop = () => reject(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    const off = session.onClose(reject);
    session.sftp.readdir(directory || '.', (error, list) => {
      off();
      signal.removeEventListener('abort', stop);
      const code = (error as { code?: number } | undefined)?.code;
      if (error)
        reject(
          new Error(code === 2 ? `No such directory ${directory}` : `Cannot list ${directory} (${error.message})`),
        );
      else
        resolve(
          list.map(({ filename, attrs }) => ({
            name: filename,
            type: attrs.isDirectory()
              ? 'directory'
              : attrs.isSymbolicLink()
                ? 'symlink'
                : attrs.isFile()
                  ? 'file'
                  : 'other',
            size: attrs.size ?? null,
            time: attrs.mtime ? new Date(attrs.mtime * 1000) : null,
          })),
        );
    });
  });
}

/**
 * The file's bytes as a stream that ends its session's use however it ends (read to the end, failed,
 * destroyed by the reader, aborted): `done(true)` only after a clean end, so that a session whose
 * reads were cut short is never reused.
 */
function readStream(session: SftpSession, path: string, signal: AbortSignal, done: (clean: boolean) => void) {
  const stream = session.sftp.createReadStream(path, { highWaterMark: 256 * 1024 });
  const stop = () => stream.destroy(signal.reason instanceof Error ? signal.reason : new Error('Read aborted'));
  signal.addEventListener('abort', stop, { once: true });
  const off = session.onClose((error) => stream.destroy(error));
  let ended = false;
  stream.once('end', () => {
    ended = true;
  });
  finished(stream, (error) => {
    off();
    signal.removeEventListener('abort', stop);
    done(ended && !error && !signal.aborted && session.lost() === null);
  });
  return stream as AsyncIterable<Uint8Array>;
}

/**
 * `sftp.execCmd` (with `$filename` = the delivered file's path) on the same connection; an exit
 * code other than `sftp.execCode` fails the attempt, in the reference's words.
 */
async function runExec(session: SftpSession, host: HostConnection, finalPath: string, signal: AbortSignal) {
  const { execCommand, execCode } = host.options.extras;
  const command = execCommand(finalPath);
  if (command === null) return;
  let code: number;
  try {
    code = await session.exec(command, signal);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw new Error(`Failed to exec '${command}' (${messageOf(error)})`);
  }
  if (code !== execCode) {
    throw new Error(`Failed to exec '${command}' (Unexpected return code for exec (${execCode}!=${code}))`);
  }
}

/** `sftp.chmod` in octal (`644`, `0640`); anything else leaves the server's default mode. */
function readMode(value: string | undefined): number | null {
  const text = value?.trim() ?? '';
  return /^0?[0-7]{3,4}$/.test(text) ? Number.parseInt(text, 8) : null;
}

/** The send's signal, also aborted once `ectrans.putTimeOut` has passed. */
function withTimeout(signal: AbortSignal, ms: number | null) {
  if (ms === null) return { signal, dispose: () => undefined };
  const controller = new AbortController();
  const forward = () => controller.abort(signal.reason);
  signal.addEventListener('abort', forward, { once: true });
  const timer = setTimeout(() => controller.abort(new Error(`Put timed out after ${ms} ms`)), ms);
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', forward);
    },
  };
}

/** The password never reaches a message, whatever a server or library echoed. */
function redacted(error: unknown, password: string | null): unknown {
  if (!password || !(error instanceof Error) || !error.message.includes(password)) return error;
  error.message = error.message.split(password).join('***');
  return error;
}
