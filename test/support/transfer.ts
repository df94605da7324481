import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { type MethodName, methodOptions } from '../../core/dissemination/method-options.ts';
import type { HostConnection } from '../../core/dissemination/methods.ts';

/** Helpers for the transfer method tests: sources, digests and hosts as the dissemination builds them. */

export async function* chunks(bytes: Uint8Array, size = 64 * 1024, pause?: (at: number) => Promise<void>) {
  for (let at = 0; at < bytes.byteLength; at += size) {
    if (pause) await pause(at);
    yield bytes.subarray(at, at + size);
  }
}

/** All the bytes of a stream, read to its end. */
export async function bytesOf(stream: AsyncIterable<Uint8Array>) {
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk);
  return Buffer.concat(parts);
}

export const payload = (n: number, seed = 7) => {
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i++) bytes[i] = (i * 31 + seed + (i >> 12)) % 251;
  return bytes;
};

export const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

/** A source that gives `head` then waits until the test ends it (an upload caught in the middle). */
export function stallingSource(head: Uint8Array) {
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => {
    release = r;
  });
  async function* source() {
    yield head;
    await held;
  }
  return { source: source(), release };
}

/**
 * Starts a send of a source that stalls after 100,000 bytes, aborts it once the upload is under
 * way, and checks that the send rejects with the abort's reason within a second. Then the source
 * is let go, so that the caller can check what reached the server.
 */
export async function abortMidway(start: (source: AsyncIterable<Uint8Array>, signal: AbortSignal) => Promise<unknown>) {
  const { source, release } = stallingSource(payload(100_000));
  const controller = new AbortController();
  const sending = start(source, controller.signal);
  await new Promise((r) => setTimeout(r, 200));
  const started = Date.now();
  controller.abort(new Error('Transfer interrupted'));
  await expect(sending).rejects.toThrow('Transfer interrupted');
  expect(Date.now() - started).toBeLessThan(1000);
  release();
  await new Promise((r) => setTimeout(r, 100));
}

/** `options` as `name = value` pairs, e.g. `{ 's3.bucketName': 'b' }`. */
export function hostFor(
  method: MethodName,
  host: { hostname?: string; login?: string; password?: string | null; directory?: string },
  options: Record<string, string | number> = {},
): HostConnection {
  const data = Object.entries(options)
    .map(([name, value]) => `${name} = "${value}"`)
    .join('\n');
  const hostname = host.hostname ?? '';
  return {
    hostId: 'test-host',
    hostname: hostname.replace(/:\d+$/, ''),
    login: host.login ?? '',
    password: host.password ?? null,
    directory: host.directory ?? '',
    options: methodOptions(method, hostname, data),
  };
}
