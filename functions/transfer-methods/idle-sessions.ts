import type { SessionLedger } from '../../core/dissemination/methods.ts';

/** The host a session is opened to, and where its mover counts it (none outside a mover). */
export interface SessionHost {
  hostId: string;
  sessions?: SessionLedger;
}

/**
 * The sessions of a transfer method: each send acquires one and releases it. Those that delivered
 * are kept idle, per host and credentials (the key), for the next send to the same place: a small
 * file then costs a few requests rather than a connection, a handshake and a login. Each is ended
 * once it has waited `idleMs` unused (sooner when the mover's ledger says so), and at once when
 * `maxPerKey` already wait for that key or the pool is closed.
 *
 * Every session opened and closed is reported to the host's ledger, and a new one is opened only
 * when the others this pool holds to the host are busy: idle ones for other credentials are ended
 * and those closing are waited for first. The mover then never holds more sessions to a host than
 * its sends need, or than it published.
 */
export function idleSessions<S extends object>(options: {
  idleMs: number;
  maxPerKey?: number;
  /** False once the server or the network closed it. */
  alive: (session: S) => boolean;
  /** Ends the session; resolves once it has closed. */
  end: (session: S) => Promise<void>;
}) {
  interface Held {
    key: string;
    host: SessionHost;
  }
  interface Entry {
    session: S;
    timer: ReturnType<typeof setTimeout>;
  }
  const held = new Map<S, Held>();
  const waiting = new Map<string, Entry[]>();
  const closing = new Map<string, Set<Promise<void>>>();
  const maxPerKey = options.maxPerKey ?? Number.POSITIVE_INFINITY;
  let closed = false;

  const forget = (key: string, entry: Entry) => {
    clearTimeout(entry.timer);
    const list = waiting.get(key) ?? [];
    const at = list.indexOf(entry);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) waiting.delete(key);
  };

  /** Ends a session this pool holds; resolves once it has closed and its ledger was told. */
  function end(session: S): Promise<void> {
    const of = held.get(session);
    if (!of) return options.end(session).catch(() => undefined);
    held.delete(session);
    const { hostId, sessions } = of.host;
    const ending = options
      .end(session)
      .catch(() => undefined)
      .then(() => {
        sessions?.closed(hostId);
        const set = closing.get(hostId);
        set?.delete(ending);
        if (set?.size === 0) closing.delete(hostId);
      });
    closing.set(hostId, (closing.get(hostId) ?? new Set()).add(ending));
    return ending;
  }

  /** The latest live session kept for `key`, no longer idle; dead ones met on the way are ended. */
  function take(key: string): S | null {
    for (let entry = waiting.get(key)?.at(-1); entry; entry = waiting.get(key)?.at(-1)) {
      forget(key, entry);
      if (options.alive(entry.session)) return entry.session;
      void end(entry.session);
    }
    return null;
  }

  /** Idle sessions to the host (for other credentials: `take` found none for the send's) ended, and all closed. */
  async function makeRoom(hostId: string) {
    for (const [key, list] of [...waiting]) {
      for (const entry of [...list]) {
        if (held.get(entry.session)?.host.hostId !== hostId) continue;
        forget(key, entry);
        void end(entry.session);
      }
    }
    while ((closing.get(hostId)?.size ?? 0) > 0) await Promise.all(closing.get(hostId)!);
  }

  return {
    /**
     * A session for `key`: an idle one, else a new one from `open`, counted by the host's ledger
     * before it is opened. `open` failing is reported as closed.
     */
    async acquire(key: string, host: SessionHost, open: () => Promise<S>): Promise<{ session: S; reused: boolean }> {
      const kept = take(key);
      if (kept) return { session: kept, reused: true };
      await makeRoom(host.hostId);
      // Another send may have left one while this one waited.
      const late = take(key);
      if (late) return { session: late, reused: true };
      await host.sessions?.opening(host.hostId);
      let session: S;
      try {
        session = await open();
      } catch (error) {
        host.sessions?.closed(host.hostId);
        throw error;
      }
      held.set(session, { key, host });
      return { session, reused: false };
    },
    /** After a send: the session kept idle for the next send to its key when `keep`, else ended. */
    async release(session: S, keep: boolean): Promise<void> {
      const of = held.get(session);
      if (!of || !keep || closed || !options.alive(session)) return end(session);
      const list = waiting.get(of.key) ?? [];
      const allowance = of.host.sessions?.idleAllowanceMs() ?? Number.POSITIVE_INFINITY;
      const idleMs = Math.min(options.idleMs, allowance);
      if (list.length >= maxPerKey || idleMs <= 0) return end(session);
      const entry: Entry = {
        session,
        timer: setTimeout(() => {
          forget(of.key, entry);
          void end(session);
        }, idleMs),
      };
      // One closed by the server while idle is skipped by `take` and ended by its timer.
      entry.timer.unref?.();
      list.push(entry);
      waiting.set(of.key, list);
    },
    /** Sessions waiting now. */
    size: () => [...waiting.values()].reduce((n, list) => n + list.length, 0),
    /** Ends every waiting session and resolves once they closed; sessions released afterwards are ended. */
    async close() {
      closed = true;
      const ending: Promise<void>[] = [];
      for (const [key, list] of [...waiting]) {
        for (const entry of [...list]) {
          forget(key, entry);
          ending.push(end(entry.session));
        }
      }
      await Promise.all([...ending, ...[...closing.values()].flatMap((set) => [...set])]);
    },
  };
}
