import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    // The workerd suite has its own configuration (npm run test:workers).
    exclude: ['test/workers/**', '**/node_modules/**'],
    // One migrated database for the run; each test file starts from a copy of it.
    globalSetup: ['test/support/template-database.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
