import type { ObjectStore } from './ports.ts';

/** How long the whole probe may take before the store is reported unreachable. */
const PROBE_MS = 30_000;

/**
 * Checks that a store can do what the service needs of it, as the server does before it serves:
 * writes a small object under a key of its own, reads it back, compares, removes it. Rejects
 * with an Error naming the store and the step that failed (write, read or delete), its cause kept.
 */
export async function probeStore(store: ObjectStore, signal: AbortSignal = AbortSignal.timeout(PROBE_MS)) {
  const key = `probe-${crypto.randomUUID()}`;
  const bytes = new TextEncoder().encode(`ecpds-edge store probe ${key} ${new Date().toISOString()}\n`);
  const failed = (step: string, error: unknown) => {
    const reason = error instanceof Error ? error.message : String(error);
    return new Error(`Store ${store.description}: the probe's ${step} failed: ${reason}`, { cause: error });
  };
  try {
    await store.write(key, once(bytes), signal, bytes.byteLength);
  } catch (error) {
    throw failed('write', error);
  }
  try {
    const read = await store.read(key, signal);
    const back = await collected(read.stream, bytes.byteLength + 1);
    if (read.size !== bytes.byteLength || !sameBytes(back, bytes)) {
      throw new Error(`${back.byteLength} bytes read back (size ${read.size}), not the ${bytes.byteLength} written`);
    }
  } catch (error) {
    await store.remove([key]).catch(() => undefined);
    throw failed('read', error);
  }
  try {
    await store.remove([key]);
  } catch (error) {
    throw failed('delete', error);
  }
}

async function* once(bytes: Uint8Array) {
  yield bytes;
}

/** The stream's bytes, at most `limit` of them (more shows the object is not the one written). */
async function collected(stream: AsyncIterable<Uint8Array>, limit: number): Promise<Uint8Array> {
  const out = new Uint8Array(limit);
  let filled = 0;
  for await (const chunk of stream) {
    const n = Math.min(chunk.byteLength, limit - filled);
    out.set(chunk.subarray(0, n), filled);
    filled += n;
    if (filled === limit) break;
  }
  return out.subarray(0, filled);
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && a.every((v, i) => v === b[i]);
