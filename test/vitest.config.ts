import { defineConfig } from 'vitest/config';
import { scaled } from './support/time.ts';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    // The workerd suite has its own configuration (npm run test:workers).
    exclude: ['test/workers/**', '**/node_modules/**'],
    // The compiled command line for the tests that start it; one migrated database for the run,
    // which each test file starts from a copy of.
    globalSetup: ['test/support/build-dist.ts', 'test/support/template-database.ts'],
    // Scaled to the machine (test/support/time.ts), as is every deadline in the tests.
    testTimeout: scaled(60_000),
    hookTimeout: scaled(120_000),
    // The default output, then one line naming the tools whose absence skipped tests (CI fails on it).
    reporters: ['default', './test/support/tool-summary-reporter.ts'],
    pool: 'forks',
    maxWorkers: 2,
  },
});
