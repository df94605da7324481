import { messageOf } from '../common/errors.ts';
import type { ObjectStore } from './ports.ts';
import { probeStore } from './probe.ts';

export interface StoreHealth {
  status: 'ok' | 'failing';
  /** The store's description: where it is, never its credentials. */
  description: string;
  /** Why it is failing: the step of the probe and the store's error. */
  reason?: string;
}

/** A health check must answer even when the store does not. */
const CHECK_MS = 3000;
/**
 * A result is reused this long: /healthz needs no credentials, and a probe writes an object, so
 * callers polling it (or flooding it) cost the store at most one small write, read and delete
 * per interval.
 */
const REUSE_MS = 5000;

const checks = new Map<string, { at: number; result: Promise<StoreHealth> }>();

/** Whether the store writes, reads back and deletes a small object now, as the server checked at start. */
export function storeHealth(store: ObjectStore, now = Date.now()): Promise<StoreHealth> {
  const last = checks.get(store.description);
  if (last && now - last.at < REUSE_MS) return last.result;
  const result = check(store);
  checks.set(store.description, { at: now, result });
  return result;
}

async function check(store: ObjectStore): Promise<StoreHealth> {
  const { description } = store;
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`Store ${description}: no answer within ${CHECK_MS} ms`);
      controller.abort(error);
      reject(error);
    }, CHECK_MS);
  });
  try {
    await Promise.race([probeStore(store, controller.signal), expired]);
    return { status: 'ok', description };
  } catch (error) {
    return { status: 'failing', description, reason: messageOf(error) };
  } finally {
    clearTimeout(timer);
  }
}
