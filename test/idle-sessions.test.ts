import { describe, expect, it } from 'vitest';
import { idleSessions } from '../functions/transfer-methods/idle-sessions.ts';

interface Fake {
  name: string;
  alive: boolean;
  ended: boolean;
}
const fake = (name: string): Fake => ({ name, alive: true, ended: false });
const pool = (idleMs = 60_000, maxPerKey?: number) =>
  idleSessions<Fake>({
    idleMs,
    maxPerKey,
    alive: (s) => s.alive,
    end: (s) => void (s.ended = true),
  });

describe('idle sessions kept for the next send', () => {
  it('gives back the latest session kept for the same key, and none for another', () => {
    const idle = pool();
    const [a, b] = [fake('a'), fake('b')];
    idle.put('host-1', a);
    idle.put('host-1', b);
    expect(idle.take('host-2')).toBeNull();
    expect(idle.take('host-1')).toBe(b);
    expect(idle.take('host-1')).toBe(a);
    expect(idle.take('host-1')).toBeNull();
    expect([a.ended, b.ended]).toEqual([false, false]);
  });

  it('ends a session that died while it waited rather than giving it out', () => {
    const idle = pool();
    const [live, dead] = [fake('live'), fake('dead')];
    idle.put('h', live);
    idle.put('h', dead);
    dead.alive = false;
    expect(idle.take('h')).toBe(live);
    expect(dead.ended).toBe(true);
    expect(idle.size()).toBe(0);
  });

  it('ends at once a session that is dead, or one too many for its key', () => {
    const idle = pool(60_000, 1);
    const [first, second, dead] = [fake('1'), fake('2'), { ...fake('x'), alive: false }];
    idle.put('h', first);
    idle.put('h', second);
    idle.put('other', dead);
    expect([first.ended, second.ended, dead.ended]).toEqual([false, true, true]);
    expect(idle.size()).toBe(1);
  });

  it('ends a session left unused for idleMs', async () => {
    const idle = pool(30);
    const s = fake('s');
    idle.put('h', s);
    await new Promise((r) => setTimeout(r, 80));
    expect(s.ended).toBe(true);
    expect(idle.take('h')).toBeNull();
  });

  it('ends every waiting session on close, and any put back afterwards', () => {
    const idle = pool();
    const [a, b, late] = [fake('a'), fake('b'), fake('late')];
    idle.put('h1', a);
    idle.put('h2', b);
    idle.close();
    idle.put('h1', late);
    expect([a.ended, b.ended, late.ended]).toEqual([true, true, true]);
    expect(idle.size()).toBe(0);
  });
});
