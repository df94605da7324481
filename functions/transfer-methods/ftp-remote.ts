import { Readable } from 'node:stream';
import { type Client, FTPError } from 'basic-ftp';
import type { RemoteFiles } from '../../core/dissemination/deliver.ts';

/** 550: the file or directory does not exist (or may not be seen). */
const missing = (error: unknown) => error instanceof FTPError && error.code === 550;

const failed = (what: string, error: unknown) =>
  new Error(`${what} failed: ${error instanceof Error ? error.message : String(error)}`);

/**
 * Files over one logged-in FTP session. Paths go to the server as given, relative to the login's
 * directory or absolute, and the working directory is never changed, so a reused session means
 * the same paths. `known` holds the directories made or found on this session, not to ask twice.
 */
export function ftpRemote(
  client: Client,
  options: { deleteOnRename: boolean; known: Set<string> },
  signal: AbortSignal,
): RemoteFiles {
  const remove = async (path: string) => {
    try {
      await client.remove(path);
    } catch (error) {
      if (!missing(error)) throw failed(`Deleting ${path}`, error);
    }
  };
  return {
    async makeDirectories(directory) {
      signal.throwIfAborted();
      let path = directory.startsWith('/') ? '/' : '';
      for (const part of directory.split('/').filter((p) => p !== '' && p !== '.')) {
        path = path === '' || path === '/' ? `${path}${part}` : `${path}/${part}`;
        if (options.known.has(path)) continue;
        // An existing directory answers 550 too; a real failure shows on the upload that follows.
        await client.sendIgnoringError(`MKD ${path}`).catch((error) => {
          throw failed(`Creating directory ${path}`, error);
        });
        options.known.add(path);
      }
    },
    write: (path, source, writeSignal) => upload(client, path, source, writeSignal),
    async size(path) {
      signal.throwIfAborted();
      try {
        return await client.size(path);
      } catch (error) {
        if (missing(error)) return null;
        throw failed(`SIZE of ${path}`, error);
      }
    },
    async rename(from, to) {
      signal.throwIfAborted();
      // Many servers refuse RNTO onto an existing file (ftp.deleteOnRename, on by default).
      if (options.deleteOnRename) await remove(to);
      try {
        await client.rename(from, to);
      } catch (error) {
        throw failed(`Renaming ${from} to ${to}`, error);
      }
    },
    remove,
  };
}

/**
 * STOR from the source. An abort (or a failing source) ends the data connection cleanly rather
 * than killing the session: the server closes the partial file and answers, and the control
 * connection stays usable to delete it. The caller closes the session if the server does not answer.
 */
async function upload(
  client: Client,
  path: string,
  source: AsyncIterable<Uint8Array>,
  signal: AbortSignal,
): Promise<number> {
  signal.throwIfAborted();
  const iterator = source[Symbol.asyncIterator]();
  let bytes = 0;
  let ended = false;
  let sourceError: unknown = null;
  let started = false;
  const end = (stream: Readable) => {
    if (ended) return;
    ended = true;
    stream.push(null);
  };
  const stream = new Readable({
    async read() {
      started = true;
      try {
        const next = await iterator.next();
        if (ended) return;
        if (next.done) return end(this);
        bytes += next.value.byteLength;
        this.push(next.value);
      } catch (error) {
        sourceError = error;
        end(this);
      }
    },
  });
  const onAbort = () => {
    end(stream);
    void iterator.return?.()?.catch(() => undefined);
  };
  signal.addEventListener('abort', onAbort, { once: true });
  const restore = awaitReplyOnDataError(client, () => started);
  try {
    await client.uploadFrom(stream, path);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw sourceError ?? failed(`Upload to ${path}`, error);
  } finally {
    restore();
    signal.removeEventListener('abort', onAbort);
  }
  if (signal.aborted) throw signal.reason;
  if (sourceError) throw sourceError;
  return bytes;
}

/** How long a reset data connection waits for the server's reply that explains it. */
const REPLY_GRACE_MS = 500;

/**
 * A server refusing a STOR (no such directory, permission denied, quota) may reset the data
 * connection before it sends its 550 on the control connection; basic-ftp then closes the session
 * on the reset and the reply is lost: the operator would read `ECONNRESET`. So until the transfer
 * starts, closing the session on a data connection error waits a short grace for that reply.
 */
function awaitReplyOnDataError(client: Client, started: () => boolean): () => void {
  const ftp = client.ftp;
  const close = ftp.closeWithError;
  ftp.closeWithError = (error: Error) => {
    const socket = ftp.dataSocket;
    if (!socket || started() || !error.message.endsWith('(data socket)')) return close.call(ftp, error);
    // The reply settles the transfer, which drops the data socket: then there is nothing to close.
    setTimeout(() => ftp.dataSocket === socket && close.call(ftp, error), REPLY_GRACE_MS).unref();
  };
  return () => void Reflect.deleteProperty(ftp, 'closeWithError');
}
