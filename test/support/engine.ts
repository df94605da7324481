import { expect } from 'vitest';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import { destinationBackup, type TestHost } from './backups.ts';
import type { Harness } from './harness.ts';
import { scaled } from './time.ts';

/**
 * Restores a destination with its dissemination hosts (primary first) through the API, as an
 * operator would, and starts it unless `start` is false.
 */
export async function restoreDestination(
  h: Harness,
  auth: string,
  name: string,
  hosts: TestHost[],
  options: { destination?: Record<string, unknown>; start?: boolean } = {},
) {
  const body = destinationBackup(name, hosts, options);
  const r = await h.call('PUT', '/v1/destination/backup', { auth, body });
  expect(r.status, r.text).toBe(200);
  if (options.start !== false) await setDestinationStatus(h.ports, 'test', name, 'start');
}

/** Waits until `check` answers something other than undefined, or fails after `timeoutMs` (scaled to the machine). */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 15_000, what = 'condition') {
  const until = Date.now() + scaled(timeoutMs);
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
