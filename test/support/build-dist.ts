import { spawnSync } from 'node:child_process';
import path from 'node:path';

/**
 * vitest globalSetup: the tests that start the real binary run the compiled build, so it is
 * built once from the sources under test (a dist/ left from an older checkout would be stale).
 */
export default function buildDist() {
  // CI builds it once (npm ci) from the checkout under test, then runs suites beside each other: a
  // rebuild here would replace the files under the processes another suite has started from them.
  if (process.env.ECPDS_DIST_FRESH === '1') return;
  const root = path.resolve(new URL('../..', import.meta.url).pathname);
  const r = spawnSync(process.execPath, ['functions/build.mjs'], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`functions/build.mjs failed (exit ${r.status}):\n${r.stderr}${r.stdout}`);
}
