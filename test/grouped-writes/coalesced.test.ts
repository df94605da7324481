import { describe, expect, it } from 'vitest';
import { coalesced } from '../../core/common/coalesced.ts';

/** Requests that come while a write is on its way share the next write; a lone request is written at once. */
describe('coalesced writes', () => {
  it('write a lone request at once, and those that come meanwhile together, in order', async () => {
    const writes: number[][] = [];
    const write = coalesced(async (inputs: number[]) => {
      writes.push(inputs);
      await new Promise((resolve) => setTimeout(resolve, 10));
      return inputs.map((n) => n * 2);
    }, 3);
    const answers = await Promise.all([1, 2, 3, 4, 5, 6].map(write));
    expect(answers).toEqual([2, 4, 6, 8, 10, 12]);
    expect(writes).toEqual([[1], [2, 3, 4], [5, 6]]);
    expect(await write(7)).toBe(14);
    expect(writes.at(-1)).toEqual([7]);
  });

  it('fail every request of a failed write, and go on with the next', async () => {
    let calls = 0;
    const write = coalesced(async (inputs: string[]) => {
      calls++;
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (calls === 2) throw new Error('gone');
      return inputs.map((s) => s.toUpperCase());
    }, 10);
    const settled = await Promise.allSettled(['a', 'b', 'c'].map(write));
    expect(settled.map((r) => (r.status === 'fulfilled' ? r.value : 'failed'))).toEqual(['A', 'failed', 'failed']);
    expect(await write('d')).toBe('D');
  });

  it('fail requests a write answered no result for, rather than answer undefined', async () => {
    const write = coalesced(async (inputs: number[]) => inputs.slice(1), 10);
    await expect(write(1)).rejects.toThrow(/fewer results/);
  });
});
