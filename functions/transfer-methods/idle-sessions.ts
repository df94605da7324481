/**
 * Sessions kept open after a send that went well, per host and credentials (the key), for the next
 * send to the same place: a small file then costs a few requests rather than a connection, a
 * handshake and a login. Each is ended once it has waited `idleMs` unused, and at once when
 * `maxPerKey` already wait for that key or the pool is closed.
 */
export function idleSessions<S>(options: {
  idleMs: number;
  maxPerKey?: number;
  /** False once the server or the network closed it. */
  alive: (session: S) => boolean;
  end: (session: S) => void;
}) {
  interface Entry {
    session: S;
    timer: ReturnType<typeof setTimeout>;
  }
  const waiting = new Map<string, Entry[]>();
  const maxPerKey = options.maxPerKey ?? Number.POSITIVE_INFINITY;
  let closed = false;

  const forget = (key: string, entry: Entry) => {
    clearTimeout(entry.timer);
    const list = waiting.get(key) ?? [];
    const at = list.indexOf(entry);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) waiting.delete(key);
  };

  return {
    /** The latest live session kept for `key`, no longer idle; dead ones met on the way are ended. */
    take(key: string): S | null {
      for (let entry = waiting.get(key)?.at(-1); entry; entry = waiting.get(key)?.at(-1)) {
        forget(key, entry);
        if (options.alive(entry.session)) return entry.session;
        options.end(entry.session);
      }
      return null;
    },
    /** Keeps `session` for the next send to `key`, or ends it. */
    put(key: string, session: S) {
      const list = waiting.get(key) ?? [];
      if (closed || !options.alive(session) || list.length >= maxPerKey) return options.end(session);
      const entry: Entry = {
        session,
        timer: setTimeout(() => {
          forget(key, entry);
          options.end(session);
        }, options.idleMs),
      };
      // One closed by the server while idle is skipped by `take` and ended by its timer.
      entry.timer.unref?.();
      list.push(entry);
      waiting.set(key, list);
    },
    /** Sessions waiting now. */
    size: () => [...waiting.values()].reduce((n, list) => n + list.length, 0),
    /** Ends every waiting session; sessions put back afterwards are ended at once. */
    close() {
      closed = true;
      for (const [key, list] of [...waiting]) {
        for (const entry of [...list]) {
          forget(key, entry);
          options.end(entry.session);
        }
      }
    },
  };
}
