import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Client } from 'basic-ftp';
import { type DeliverySteps, deliverFile } from '../../core/dissemination/deliver.ts';
import type { DeliveryExtras } from '../../core/dissemination/delivery-options.ts';
import { readFlag } from '../../core/dissemination/method-options.ts';
import { deliveryFor, type HostConnection, type TransferMethod } from '../../core/dissemination/methods.ts';
import { checkRemoteFiles } from '../../core/host-checks/remote-check.ts';
import { nodeHashing } from '../node/hashing.ts';
import { endClient, type FtpKind, type FtpTarget, ftpTarget, openClient, reason } from './ftp-connect.ts';
import { ftpEntries } from './ftp-list.ts';
import { ftpRemote } from './ftp-remote.ts';
import { idleSessions } from './idle-sessions.ts';

interface Session {
  client: Client;
  /** Directories made or found on this session. */
  known: Set<string>;
}

export interface FtpMethodOptions {
  /** How long a session stays open without a send; 5 s by default. */
  idleMs?: number;
  /** Called for each new control connection (logged in), e.g. to count them. */
  onConnect?: (target: FtpTarget) => void;
}

/** How long the server has to answer once the data connection was closed on an abort. */
const ABORT_GRACE_MS = 2_000;

/**
 * The `ftp` and `ftps` methods over basic-ftp. Logged-in sessions are kept per server and
 * credentials and reused, one send at a time each: a small file costs a few round trips instead
 * of a connection, a TLS handshake and a login.
 */
export function ftpMethod(kind: FtpKind, options: FtpMethodOptions = {}): TransferMethod {
  const idle = idleSessions<Session>({
    idleMs: options.idleMs ?? 5_000,
    // A server that timed the session out has closed it; basic-ftp noticed the FIN.
    alive: (session) => !session.client.closed,
    end: (session) => endClient(session.client),
  });
  let closed = false;

  const keyOf = (t: FtpTarget) =>
    createHash('sha256')
      .update(JSON.stringify([kind, t]))
      .digest('hex');

  const open = async (target: FtpTarget, signal: AbortSignal): Promise<Session> => {
    const client = await openClient(target, signal);
    options.onConnect?.(target);
    return { client, known: new Set() };
  };

  /** A session of its own, ended by the caller: a read or a listing shares none of the sends' sessions. */
  async function ownSession(host: HostConnection, signal: AbortSignal) {
    if (closed) throw new Error(`The ${kind} method is closed`);
    const target = ftpTarget(kind, host);
    const { client } = await open(target, signal);
    const onAbort = () => client.close();
    signal.addEventListener('abort', onAbort, { once: true });
    return { target, client, detach: () => signal.removeEventListener('abort', onAbort) };
  }

  /**
   * `use` on a session of its own, ended once it is done; a failure is given without the password, an
   * abort as the signal's reason.
   */
  async function inOwnSession<T>(host: HostConnection, signal: AbortSignal, use: (client: Client) => Promise<T>) {
    const { target, client, detach } = await ownSession(host, signal);
    try {
      const done = await use(client);
      await endClient(client);
      return done;
    } catch (error) {
      client.close();
      if (signal.aborted) throw signal.reason;
      throw new Error(reason(error, target.password));
    } finally {
      detach();
    }
  }

  return {
    async send(host, file, source, signal) {
      if (closed) throw new Error(`The ${kind} method is closed`);
      const target = ftpTarget(kind, host);
      const key = keyOf(target);
      const deleteOnRename = readFlag(host.options.raw.get('deleteOnRename'), true);
      // A session that died while idle is only found out by its first command; then the file is
      // sent again on a new session, as long as nothing was read from the source.
      let touched = false;
      const tracked: AsyncIterable<Uint8Array> = {
        [Symbol.asyncIterator]: () => {
          touched = true;
          return source[Symbol.asyncIterator]();
        },
      };
      for (;;) {
        const { session, reused } = await idle.acquire(key, host, () => open(target, signal));
        let grace: ReturnType<typeof setTimeout> | undefined;
        const onAbort = () => {
          grace = setTimeout(() => session.client.close(), ABORT_GRACE_MS);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        try {
          const remote = ftpRemote(session.client, { deleteOnRename, known: session.known }, signal);
          const steps = rawCommandSteps(session.client, host.options.extras, signal);
          const delivered = await deliverFile(remote, deliveryFor(host, file, steps), tracked, signal, nodeHashing);
          await idle.release(session, true);
          return delivered;
        } catch (error) {
          const died = session.client.closed;
          // A failed send ends only once its session has: until then the server may still hold the
          // file open, and the next attempt, on another session, would make it two writers.
          await idle.release(session, false);
          if (signal.aborted) throw signal.reason;
          if (!(died && reused && !touched)) throw error;
        } finally {
          clearTimeout(grace);
          signal.removeEventListener('abort', onAbort);
        }
      }
    },
    async fetch(host, path, signal) {
      // Ended once the file is read.
      const { target, client, detach } = await ownSession(host, signal);
      let size: number;
      try {
        size = await client.size(path);
      } catch (error) {
        detach();
        client.close();
        if (signal.aborted) throw signal.reason;
        throw new Error(`Cannot be read (${reason(error, target.password)})`);
      }
      // basic-ftp pipes the data connection into the stream and ends it; a reader that stops early
      // (destroys the stream) has the connection closed.
      const stream = new PassThrough({ highWaterMark: 256 * 1024 });
      stream.once('close', () => {
        if (!client.closed && !stream.writableFinished) client.close();
      });
      client
        .downloadTo(stream, path)
        .then(
          () => endClient(client),
          (error: unknown) => {
            stream.destroy(new Error(`Read failed (${reason(error, target.password)})`));
            client.close();
          },
        )
        .finally(detach);
      return { size, stream };
    },
    async list(host, directory, signal) {
      const entries = await inOwnSession(host, signal, (client) => {
        // An abort as the login ended found neither openClient's listener nor this one.
        signal.throwIfAborted();
        return ftpEntries(client, directory);
      });
      // An abort while the session ended cut it short; the entries are not wanted any more.
      signal.throwIfAborted();
      return entries;
    },
    check(host, file, signal) {
      // A session of its own, logged in now: an idle one kept for sends would prove nothing.
      return inOwnSession(host, signal, (client) => {
        const remote = ftpRemote(client, { deleteOnRename: false, known: new Set() }, signal);
        return checkRemoteFiles(remote, host.directory, file, signal);
      });
    },
    async close() {
      closed = true;
      // A session busy with a send is closed when that send ends.
      await idle.close();
    },
  };
}

/**
 * `ftp.prePutCmd` before the upload (`$filename` = the final name) and `ftp.postPutCmd` once the
 * bytes are written, before the rename (`$filename` = the name written), as the reference runs
 * them: each `;`-separated command sent as is, an error reply failing the attempt.
 */
function rawCommandSteps(client: Client, extras: DeliveryExtras, signal: AbortSignal): DeliverySteps {
  const run = async (commands: string[]) => {
    for (const command of commands) {
      signal.throwIfAborted();
      try {
        await client.send(command);
      } catch (error) {
        throw new Error(`FTP command ${command} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  };
  return {
    beforeWrite: (finalPath) => run(extras.prePutCommands(finalPath)),
    afterWrite: (writtenPath) => run(extras.postPutCommands(writtenPath)),
  };
}
