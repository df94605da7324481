import { describe, expect, it } from 'vitest';
import { batchedStdout, jsonLogger } from '../functions/node/logger.ts';

describe('the Node server output', () => {
  it('writes one JSON object per line: time, level, message, then the fields in order', () => {
    const lines: string[] = [];
    const logger = jsonLogger((l) => lines.push(l));
    logger.info('request', { method: 'GET', status: 200, ms: 1.5, client: null, skipped: undefined, text: 'a "quoted"\nline' });
    logger.warn('plain');
    logger.error('odd "message"\u2028', { nested: { a: [1, 2] } });
    expect(lines.every((l) => l.endsWith('\n') && !l.slice(0, -1).includes('\n'))).toBe(true);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(Object.keys(parsed[0]!)).toEqual(['time', 'level', 'msg', 'method', 'status', 'ms', 'client', 'text']);
    expect(parsed[0]).toMatchObject({ level: 'info', msg: 'request', method: 'GET', status: 200, ms: 1.5, client: null, text: 'a "quoted"\nline' });
    expect(parsed[1]).toEqual({ time: expect.any(String), level: 'warn', msg: 'plain' });
    expect(parsed[2]).toEqual({ time: expect.any(String), level: 'error', msg: 'odd "message"\u2028', nested: { a: [1, 2] } });
    expect(new Date(parsed[0]!.time as string).toISOString()).toBe(parsed[0]!.time);
  });

  it('gathers the lines of one turn of the event loop into one write, in order', async () => {
    const writes: string[] = [];
    const out = batchedStdout({ write: (text: string) => (writes.push(text), true) } as unknown as NodeJS.WritableStream);
    out.write('a\n');
    out.write('b\n');
    expect(writes).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual(['a\nb\n']);
    out.write('c\n');
    out.flush();
    expect(writes).toEqual(['a\nb\n', 'c\n']);
  });
});
