import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createCredentialCache } from '../../core/api-clients/auth.ts';
import { createMemo } from '../../core/common/memo.ts';
import { createViewCache } from '../../core/destinations/view-cache.ts';
import { createAuthThrottle } from '../../core/api-clients/auth-throttle.ts';
import type { Logger, Ports } from '../../core/ports.ts';
import { httpNotePublisher } from '../../core/metadata/notes.ts';
import { openPostgres, type DbHandle } from '../../db/client.ts';
import { openPglite } from '../../db/pglite.ts';
import { migrate } from '../../db/migrate.ts';
import { createRepositories } from '../../db/repositories/index.ts';
import type { NodeConfig } from './config.ts';
import { acquire, assertNotHeld } from './lock.ts';
import { loadSecretBox } from './secrets.ts';
import { eventSink } from './events.ts';
import { nodeSourceProber } from './sources.ts';
import { nativeSha256Base64 } from './digest.ts';

export interface Runtime {
  config: NodeConfig;
  handle: DbHandle;
  ports: Ports;
  /** Waits for work handed to waitUntil, then closes the database. */
  close(): Promise<void>;
}

/**
 * Opens the configured database (migrated), the secrets and the ports. `hold` is for the
 * server, which keeps the embedded data dir to itself; CLI commands only check it is free.
 */
export async function openRuntime(config: NodeConfig, logger: Logger, options: { hold: boolean }): Promise<Runtime> {
  const secrets = loadSecretBox(config);
  let release = () => {};
  if (!config.databaseUrl) {
    if (options.hold) release = acquire(config.dataDir);
    else assertNotHeld(config.dataDir);
  }
  let handle: DbHandle;
  try {
    handle = config.databaseUrl ? openPostgres(config.databaseUrl) : await openPglite(path.join(config.dataDir, 'pgdata'));
    await migrate(handle);
  } catch (e) {
    release();
    throw e;
  }
  const pending = new Set<Promise<unknown>>();
  const events = eventSink(config.eventLog);
  const ports: Ports = {
    repos: createRepositories(handle.db),
    clock: () => new Date(),
    secrets,
    logger,
    credentialCache: createCredentialCache(new Uint8Array(randomBytes(32)), nativeSha256Base64),
    memo: createMemo(),
    views: createViewCache(),
    authThrottle: createAuthThrottle(),
    notes: config.notesUrl ? httpNotePublisher(config.notesUrl, config.notesToken) : null,
    events: events.sink,
    sources: nodeSourceProber({ roots: config.sourceRoots, hosts: config.sourceHosts, timeoutMs: config.sourceTimeoutMs }),
    waitUntil(work) {
      const tracked = work
        .catch((e: unknown) => logger.error('background work failed', { reason: e instanceof Error ? e.message : String(e) }))
        .finally(() => pending.delete(tracked));
      pending.add(tracked);
    },
  };
  return {
    config,
    handle,
    ports,
    async close() {
      await Promise.allSettled([...pending]);
      await handle.close();
      await events.close();
      release();
    },
  };
}
