import { describe, expect, it } from 'vitest';
import type { SessionLedger } from '../core/dissemination/methods.ts';
import { idleSessions } from '../functions/transfer-methods/idle-sessions.ts';

interface Fake {
  name: string;
  alive: boolean;
  ended: boolean;
}
const fake = (name: string): Fake => ({ name, alive: true, ended: false });

/** A pool whose sessions end when `finishEnd` is called for them (at once unless `slowEnd`). */
const pool = (idleMs = 60_000, maxPerKey?: number, slowEnd = false) => {
  const ending = new Map<string, () => void>();
  const idle = idleSessions<Fake>({
    idleMs,
    maxPerKey,
    alive: (s) => s.alive,
    end: (s) =>
      new Promise<void>((resolve) => {
        const finish = () => {
          s.ended = true;
          resolve();
        };
        if (slowEnd) ending.set(s.name, finish);
        else finish();
      }),
  });
  return { idle, finishEnd: (name: string) => ending.get(name)?.() };
};

/** A ledger that records what it is told, in order. */
const ledger = (over: Partial<SessionLedger> = {}) => {
  const events: string[] = [];
  const sessions: SessionLedger = {
    async opening(hostId) {
      events.push(`opening ${hostId}`);
    },
    closed: (hostId) => void events.push(`closed ${hostId}`),
    idleAllowanceMs: () => Number.POSITIVE_INFINITY,
    ...over,
  };
  return { sessions, events };
};

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('idle sessions kept for the next send', () => {
  it('gives back the latest session kept for the same key, and opens one for another', async () => {
    const { idle } = pool();
    const host = { hostId: 'h' };
    const [a, b, c, d] = [fake('a'), fake('b'), fake('c'), fake('d')];
    await idle.acquire('k1', host, async () => a);
    await idle.acquire('k1', host, async () => b);
    await idle.release(a, true);
    await idle.release(b, true);
    expect(await idle.acquire('k2', { hostId: 'h2' }, async () => c)).toEqual({ session: c, reused: false });
    expect(await idle.acquire('k1', host, async () => d)).toEqual({ session: b, reused: true });
    expect(await idle.acquire('k1', host, async () => d)).toEqual({ session: a, reused: true });
    expect(await idle.acquire('k1', host, async () => d)).toEqual({ session: d, reused: false });
    expect([a.ended, b.ended, c.ended, d.ended]).toEqual([false, false, false, false]);
  });

  it('ends a session that died while it waited rather than giving it out', async () => {
    const { idle } = pool();
    const host = { hostId: 'h' };
    const [live, dead, fresh] = [fake('live'), fake('dead'), fake('fresh')];
    await idle.acquire('k', host, async () => live);
    await idle.acquire('k', host, async () => dead);
    await idle.release(live, true);
    await idle.release(dead, true);
    dead.alive = false;
    expect((await idle.acquire('k', host, async () => fresh)).session).toBe(live);
    expect(dead.ended).toBe(true);
    expect(idle.size()).toBe(0);
  });

  it('ends a session that failed, is dead, or is one too many for its key', async () => {
    const { idle } = pool(60_000, 1);
    const host = { hostId: 'h' };
    const [first, second, dead, failed] = [fake('1'), fake('2'), { ...fake('x'), alive: false }, fake('f')];
    for (const s of [first, second]) await idle.acquire('k', host, async () => s);
    for (const s of [dead, failed]) await idle.acquire(s.name, host, async () => s);
    await idle.release(first, true);
    await idle.release(second, true);
    await idle.release(failed, false);
    await idle.release(dead, true);
    expect([first.ended, second.ended, failed.ended, dead.ended]).toEqual([false, true, true, true]);
    expect(idle.size()).toBe(1);
  });

  it('ends a session left unused for idleMs', async () => {
    const { idle } = pool(30);
    const s = fake('s');
    await idle.acquire('k', { hostId: 'h' }, async () => s);
    await idle.release(s, true);
    await new Promise((r) => setTimeout(r, 80));
    expect(s.ended).toBe(true);
    expect(idle.size()).toBe(0);
  });

  it('ends every waiting session on close, and any released afterwards', async () => {
    const { idle } = pool();
    const [a, b, late] = [fake('a'), fake('b'), fake('late')];
    for (const s of [a, b, late]) await idle.acquire(s.name, { hostId: 'h' }, async () => s);
    await idle.release(a, true);
    await idle.release(b, true);
    await idle.close();
    await idle.release(late, true);
    expect([a.ended, b.ended, late.ended]).toEqual([true, true, true]);
    expect(idle.size()).toBe(0);
  });
});

describe('idle sessions and the mover that counts them', () => {
  it('counts a session before it is opened and writes it off once it has closed; a reuse costs nothing', async () => {
    const { idle, finishEnd } = pool(60_000, undefined, true);
    const { sessions, events } = ledger();
    const s = fake('s');
    await idle.acquire('k', { hostId: 'h', sessions }, async () => {
      events.push('open');
      return s;
    });
    await idle.release(s, true);
    await idle.acquire('k', { hostId: 'h', sessions }, async () => fake('unused'));
    const released = idle.release(s, false);
    await tick();
    expect(events).toEqual(['opening h', 'open']);
    finishEnd('s');
    await released;
    expect(events).toEqual(['opening h', 'open', 'closed h']);
  });

  it('opens nothing when the session cannot be counted, and writes off one that failed to open', async () => {
    const { idle } = pool();
    const refused = ledger({
      opening: async () => {
        throw new Error('database unreachable');
      },
    });
    let opened = 0;
    const open = async () => {
      opened++;
      return fake('s');
    };
    await expect(idle.acquire('k', { hostId: 'h', sessions: refused.sessions }, open)).rejects.toThrow(
      'database unreachable',
    );
    expect(opened).toBe(0);
    const { sessions, events } = ledger();
    const failing = async (): Promise<Fake> => {
      throw new Error('connection refused');
    };
    await expect(idle.acquire('k', { hostId: 'h', sessions }, failing)).rejects.toThrow('connection refused');
    expect(events).toEqual(['opening h', 'closed h']);
  });

  it("opens a new session to a host only once its others are busy: another key's idle ones ended, closing ones closed", async () => {
    const { idle, finishEnd } = pool(60_000, undefined, true);
    const { sessions, events } = ledger();
    const host = { hostId: 'h', sessions };
    const [old, failed, busy, fresh] = [fake('old'), fake('failed'), fake('busy'), fake('fresh')];
    for (const s of [old, failed, busy]) await idle.acquire(s.name, host, async () => s);
    await idle.release(old, true);
    void idle.release(failed, false);
    events.length = 0;

    const acquired = idle.acquire('new-credentials', host, async () => {
      events.push('open');
      return fresh;
    });
    await tick();
    // The idle session of the old credentials is being ended; the failed one is still closing.
    expect(events).toEqual([]);
    finishEnd('old');
    await tick();
    expect(events).toEqual(['closed h']);
    finishEnd('failed');
    expect((await acquired).session).toBe(fresh);
    expect(events).toEqual(['closed h', 'closed h', 'opening h', 'open']);
    expect(busy.ended).toBe(false);
  });

  it('keeps a session idle no longer than the ledger allows', async () => {
    const { idle } = pool(60_000);
    let allowance = 0;
    const { sessions } = ledger({ idleAllowanceMs: () => allowance });
    const [now, soon] = [fake('now'), fake('soon')];
    for (const s of [now, soon]) await idle.acquire(s.name, { hostId: 'h', sessions }, async () => s);
    await idle.release(now, true);
    expect(now.ended).toBe(true);
    allowance = 30;
    await idle.release(soon, true);
    expect(soon.ended).toBe(false);
    await new Promise((r) => setTimeout(r, 80));
    expect(soon.ended).toBe(true);
  });
});
