import path from 'node:path';
import { bootstrapWebAdmin } from '../../core/console/sign-in.ts';
import { httpSourceProber, httpSourceReader } from '../../core/data-files/sources.ts';
import { type DbHandle, openPostgres } from '../../db/client.ts';
import { migrate } from '../../db/migrate.ts';
import { type EdgeSending, fetchMethods } from '../edge/deliveries.ts';
import { assertTlsPair, type FetchEnvConfig, fetchEnvSchema, parseEnv } from '../env.ts';
import { createFetchShell, type DatabaseAccess, type FetchShell, keepRunning } from '../fetch-shell.ts';
import { acquire } from '../node/lock.ts';
import { bootstrapAdmin, provisionProperties } from '../node/provision.ts';
import { loadSecretBox } from '../node/secrets.ts';
import { parseStoreConfig } from '../store/config.ts';
import { openStore } from '../store/open.ts';

/**
 * The fetch shell as the entries of Bun, Deno and AWS Lambda build it from their environment:
 * - the database: DATABASE_URL's Postgres through postgres.js, pooled (ECPDS_DATABASE_MAX clients), or
 *   a client per call behind a transaction pooler (ECPDS_DATABASE_POOLER=transaction); unset, the
 *   embedded database in ECPDS_DATA_DIR;
 * - sources: http(s) on ECPDS_SOURCE_HOSTS (no file system is assumed to be shared);
 * - the store: ECPDS_STORE_URL (an S3-compatible bucket, or a directory) when set, else none;
 * - the edge mover's methods: those that need no more than fetch.
 */
export interface Standalone {
  config: FetchEnvConfig;
  shell: FetchShell;
  sending: Omit<EdgeSending, 'queue'>;
  /** Applies the bundled migrations (a one-off task where the server does not at start). */
  migrate(): Promise<void>;
  /** Closes the database the shell keeps. */
  close(): Promise<void>;
}

export async function openStandalone(
  env: Record<string, string | undefined>,
  options: { migrate: boolean },
): Promise<Standalone> {
  const config = parseEnv(fetchEnvSchema, env);
  assertTlsPair(config);
  const dataDir = path.resolve(config.ECPDS_DATA_DIR);
  const secrets = loadSecretBox({ secretKey: config.ECPDS_SECRET_KEY, databaseUrl: config.DATABASE_URL, dataDir });
  const handle = await openDatabase(config, dataDir);
  if (options.migrate) await migrateWith(handle.access);
  const storeConfig = env.ECPDS_STORE_URL ? parseStoreConfig(env) : null;
  const sources = {
    reader: httpSourceReader(config.ECPDS_SOURCE_HOSTS),
    prober: httpSourceProber(config.ECPDS_SOURCE_HOSTS, config.ECPDS_SOURCE_TIMEOUT_MS),
  };
  const shell = createFetchShell({
    config,
    secrets,
    database: handle.access,
    sources,
    store: storeConfig ? openStore(storeConfig) : null,
    trustProxy: config.ECPDS_TRUST_PROXY,
  });
  return {
    config,
    shell,
    sending: { methods: fetchMethods(), sources: sources.reader },
    migrate: () => migrateWith(handle.access),
    close: async () => handle.kept?.close(),
  };
}

async function migrateWith(access: DatabaseAccess) {
  const handle = access.open();
  try {
    await migrate(handle);
  } finally {
    if (access.perCall) await handle.close();
  }
}

async function openDatabase(config: FetchEnvConfig, dataDir: string) {
  const url = config.DATABASE_URL;
  if (url !== null && config.ECPDS_DATABASE_POOLER === 'transaction') {
    const access: DatabaseAccess = { open: () => openPostgres(url, { perRequest: true }), perCall: true };
    return { access, kept: null };
  }
  let kept: DbHandle;
  if (url !== null && config.ECPDS_DATABASE_DRIVER === 'neon') kept = await openNeonFor(url, config);
  else if (url !== null) kept = openPostgres(url, { max: config.ECPDS_DATABASE_MAX });
  else kept = await openEmbedded(dataDir);
  return { access: { open: () => kept, perCall: false } satisfies DatabaseAccess, kept };
}

/** The embedded database, held as the Node server holds it: a second process on it would corrupt it. */
async function openEmbedded(dataDir: string): Promise<DbHandle> {
  const release = acquire(dataDir);
  try {
    const { openPglite } = await import('../../db/pglite.ts');
    const handle = await openPglite(path.join(dataDir, 'pgdata'));
    return { ...handle, close: () => handle.close().finally(release) };
  } catch (e) {
    release();
    throw e;
  }
}

/** Neon's driver, through ECPDS_NEON_WS_PROXY when set (`ws://host:port/path` or `wss://...`). */
async function openNeonFor(url: string, config: FetchEnvConfig): Promise<DbHandle> {
  const { openNeon } = await import('../../db/neon.ts');
  const proxy = config.ECPDS_NEON_WS_PROXY;
  const secure = proxy === null || !proxy.startsWith('ws://');
  return openNeon(url, {
    max: config.ECPDS_DATABASE_MAX,
    ...(proxy !== null && { wsProxy: proxy.replace(/^wss?:\/\//, ''), secure }),
    ...(typeof WebSocket === 'undefined' && { webSocket: (await import('ws')).WebSocket as never }),
  });
}

/**
 * A long-lived server's first start on an empty database, as the Node server's: the API clients of
 * ECPDS_PROPERTIES, or one full-access client whose secret is printed once; a console administrator.
 */
export async function firstStart(standalone: Standalone, url: string, print: (text: string) => void) {
  await standalone.shell.run({ waitUntil: keepRunning }, async (scope) => {
    const ports = scope.ports();
    const file = standalone.config.ECPDS_PROPERTIES;
    const secret = file ? (await provisionProperties(ports, file), null) : await bootstrapAdmin(ports);
    if (secret) {
      print(
        `Bootstrap API client 'admin' created with full access. Its secret is shown this once:\n\n    ${secret}\n\n`,
      );
      print(`Try it:\n    curl -k -u admin:${secret} ${url}/v1/incoming/user/list\n\n`);
    }
    const password = await bootstrapWebAdmin(ports);
    if (password)
      print(`Console administrator 'admin' created. Its password is shown this once:\n\n    ${password}\n\n`);
  });
}
