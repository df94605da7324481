import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './processes.ts';

/**
 * Where a test writes a screenshot that the repository keeps (the docs show it): under the
 * ignored test-artifacts/ by default, so that a test run leaves the working tree as it found it;
 * over the tracked file itself with UPDATE_SCREENSHOTS=1.
 */
export function screenshotPath(tracked: string): string {
  const relative = path.relative(ROOT, path.resolve(tracked));
  const file =
    process.env.UPDATE_SCREENSHOTS === '1' ? path.join(ROOT, relative) : path.join(ROOT, 'test-artifacts', relative);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  return file;
}
