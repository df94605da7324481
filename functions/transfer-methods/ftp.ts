import { createHash } from 'node:crypto';
import type { Client } from 'basic-ftp';
import { deliverFile } from '../../core/dissemination/deliver.ts';
import { readFlag } from '../../core/dissemination/method-options.ts';
import { deliveryFor, type TransferMethod } from '../../core/dissemination/methods.ts';
import { type FtpKind, type FtpTarget, ftpTarget, openClient } from './ftp-connect.ts';
import { ftpRemote } from './ftp-remote.ts';

interface Session {
  client: Client;
  /** Directories made or found on this session. */
  known: Set<string>;
  /** Came from the idle pool: it may have died while it waited. */
  reused: boolean;
  idleTimer?: ReturnType<typeof setTimeout>;
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
  const idleMs = options.idleMs ?? 5_000;
  const idle = new Map<string, Session[]>();
  let closed = false;

  const keyOf = (t: FtpTarget) =>
    createHash('sha256')
      .update(JSON.stringify([kind, t]))
      .digest('hex');

  async function acquire(key: string, target: FtpTarget, signal: AbortSignal): Promise<Session> {
    const waiting = idle.get(key) ?? [];
    for (let session = waiting.pop(); session; session = waiting.pop()) {
      clearTimeout(session.idleTimer);
      // A server that timed the session out has closed it; basic-ftp noticed the FIN.
      if (!session.client.closed) return Object.assign(session, { reused: true });
    }
    const client = await openClient(target, signal);
    options.onConnect?.(target);
    return { client, known: new Set(), reused: false };
  }

  function release(key: string, session: Session) {
    if (closed) return session.client.close();
    session.idleTimer = setTimeout(() => {
      const list = idle.get(key);
      list?.splice(list.indexOf(session), 1);
      if (list?.length === 0) idle.delete(key);
      session.client.close();
    }, idleMs);
    session.idleTimer.unref();
    idle.set(key, [...(idle.get(key) ?? []), session]);
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
        const session = await acquire(key, target, signal);
        let grace: ReturnType<typeof setTimeout> | undefined;
        const onAbort = () => void (grace = setTimeout(() => session.client.close(), ABORT_GRACE_MS));
        signal.addEventListener('abort', onAbort, { once: true });
        try {
          const remote = ftpRemote(session.client, { deleteOnRename, known: session.known }, signal);
          const delivered = await deliverFile(remote, deliveryFor(host, file), tracked, signal);
          release(key, session);
          return delivered;
        } catch (error) {
          const died = session.client.closed;
          session.client.close();
          if (signal.aborted) throw signal.reason;
          if (!(died && session.reused && !touched)) throw error;
        } finally {
          clearTimeout(grace);
          signal.removeEventListener('abort', onAbort);
        }
      }
    },
    async close() {
      closed = true;
      for (const sessions of idle.values()) {
        for (const session of sessions) {
          clearTimeout(session.idleTimer);
          session.client.close();
        }
      }
      // A session busy with a send is closed when that send ends.
      idle.clear();
    },
  };
}
