import { messageOf } from '../../core/common/errors.ts';
import { probeStore } from '../../core/store/probe.ts';
import { ConfigError } from './config.ts';
import type { Runtime } from './runtime.ts';

/**
 * Refuses to go on with a store that cannot write, read back and delete a small object: a server
 * or mover that started anyway would accept puts it could never retrieve. The message names the
 * store by its description (never its credentials) and says which step failed and why.
 */
export async function probeRuntimeStore(runtime: Runtime): Promise<void> {
  const { store } = runtime.ports;
  if (!store) return;
  try {
    await probeStore(store);
  } catch (e) {
    await runtime.close();
    throw new ConfigError(
      `cannot use the store (ECPDS_STORE_URL; ECPDS_RETRIEVAL=none reads sources at send instead): ${messageOf(e)}`,
    );
  }
}
