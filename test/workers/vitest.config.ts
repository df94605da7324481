import { randomBytes } from 'node:crypto';
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';

/**
 * The API inside workerd (through wrangler.toml) against a fresh database on the local
 * Postgres, created and migrated by the global setup (migrations never run in a Worker).
 */
const base = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
base.pathname = `/ecpds_workers_${Date.now().toString(36)}_${process.pid}`;
// Hyperdrive insists on a password in the connection string; trust authentication ignores it.
if (!base.password) base.password = 'unused';
process.env.ECPDS_WORKERS_DATABASE_URL ??= base.toString();
process.env.ECPDS_WORKERS_SECRET_KEY ??= randomBytes(32).toString('base64');
process.env.ECPDS_WORKERS_SOURCE_PORT ??= String(20000 + (process.pid % 20000));
// The S3 server the edge delivers to, on the next port (the global setup starts it).
process.env.ECPDS_WORKERS_S3_PORT ??= String(Number(process.env.ECPDS_WORKERS_SOURCE_PORT) + 1);

const isClosedSocketRead = (error: { message?: string; stack?: string; stacks?: Array<{ file: string }> }) =>
  error.message === 'Stream was cancelled.' &&
  ((error.stack ?? '').includes('postgres/cf/polyfills') ||
    (error.stacks ?? []).some((s) => s.file.includes('postgres/cf/polyfills')));

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: '../../wrangler.toml' },
      miniflare: {
        hyperdrives: { HYPERDRIVE: process.env.ECPDS_WORKERS_DATABASE_URL },
        // A bucket of data-file sources (r2:// sources), besides wrangler.toml's ECPDS_R2 (a destination).
        // ECPDS_STORE: the service's own store (functions/workers/r2-store.ts).
        r2Buckets: ['ECPDS_SOURCES', 'ECPDS_STORE'],
        bindings: {
          ECPDS_SECRET_KEY: process.env.ECPDS_WORKERS_SECRET_KEY,
          ECPDS_SOURCE_HOSTS: `127.0.0.1:${process.env.ECPDS_WORKERS_SOURCE_PORT}`,
          // NOT_BOUND is allowed but bound to nothing; ECPDS_R2 is bound but not allowed as a source.
          ECPDS_SOURCE_BUCKETS: 'ECPDS_SOURCES,NOT_BOUND',
          ECPDS_SOURCE_TIMEOUT_MS: '3000',
          // Test only: the S3 server and the sources are on the loopback interface.
          ECPDS_EDGE_ALLOW_PRIVATE: '1',
          ECPDS_EDGE_HEARTBEAT_SECONDS: '1',
          TEST_S3_URL: `http://127.0.0.1:${process.env.ECPDS_WORKERS_S3_PORT}`,
        },
      },
    }),
  ],
  test: {
    root: new URL('.', import.meta.url).pathname,
    include: ['**/*.test.ts'],
    globalSetup: ['./global-setup.ts'],
    testTimeout: 60_000,
    // postgres.js's socket polyfill rejects its pending read when `end()` closes the socket after a
    // request; that rejection is expected and harmless. Anything else still fails the run.
    onUnhandledError: (error) => !isClosedSocketRead(error),
    hookTimeout: 120_000,
  },
});
