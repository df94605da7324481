import { describe, expect, it } from 'vitest';
import { batchedStdout, jsonLogger } from '../functions/node/logger.ts';

describe('the Node server output', () => {
  it('writes one JSON object per line: level, time, message, then the fields in order', () => {
    const lines: string[] = [];
    const logger = jsonLogger((l) => lines.push(l));
    logger.info('request', {
      method: 'GET',
      status: 200,
      ms: 1.5,
      client: null,
      skipped: undefined,
      text: 'a "quoted"\nline',
    });
    logger.warn('plain');
    logger.error('odd "message"\u2028', { nested: { a: [1, 2] } });
    expect(lines.every((l) => l.endsWith('\n') && !l.slice(0, -1).includes('\n'))).toBe(true);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(Object.keys(parsed[0]!)).toEqual(['level', 'time', 'msg', 'method', 'status', 'ms', 'client', 'text']);
    expect(parsed[0]).toMatchObject({
      level: 'info',
      msg: 'request',
      method: 'GET',
      status: 200,
      ms: 1.5,
      client: null,
      text: 'a "quoted"\nline',
    });
    expect(parsed[1]).toEqual({ time: expect.any(String), level: 'warn', msg: 'plain' });
    expect(parsed[2]).toEqual({
      time: expect.any(String),
      level: 'error',
      msg: 'odd "message"\u2028',
      nested: { a: [1, 2] },
    });
    expect(new Date(parsed[0]!.time as string).toISOString()).toBe(parsed[0]!.time);
  });

  it('never writes the value of a secret-like key, should a caller pass one', () => {
    const lines: string[] = [];
    const logger = jsonLogger((l) => lines.push(l));
    logger.warn('odd', {
      user: 'alice',
      authorization: 'Basic YWxpY2U6czNjcmV0',
      Password: 'p4ss',
      secret: 's3cret',
      headers: { authorization: 'Bearer t0ken', accept: 'text/plain' },
    });
    expect(lines.join('')).not.toMatch(/YWxpY2U6czNjcmV0|p4ss|s3cret|t0ken/);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      user: 'alice',
      authorization: '[redacted]',
      Password: '[redacted]',
      headers: { authorization: '[redacted]', accept: 'text/plain' },
    });
  });

  it('gathers the lines of one turn of the event loop into one write, in order', async () => {
    const writes: string[] = [];
    const out = batchedStdout({
      write: (text: string) => (writes.push(text), true),
    } as unknown as NodeJS.WritableStream);
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
