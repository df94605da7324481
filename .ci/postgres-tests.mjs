// Prints the test files whose database follows TEST_DATABASE_URL: those that read it, or import the
// harness or the database support, directly or through helpers of their own (relative imports,
// followed transitively). The others (pure functions, the browser and the commands on their own
// embedded data directory) would only repeat the first pass. Run from the project's root.
import fs from 'node:fs';
import path from 'node:path';

const ROOTS = ['test'];
const SKIPPED = new Set(['test/workers', 'test/faults']);
const USES_DATABASE = /support\/(harness|database)\.ts|process\.env\.TEST_DATABASE_URL/;
const RELATIVE_IMPORT = /(?:import|export)[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g;

const filesUnder = (dir) =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return SKIPPED.has(full) || entry.name === 'node_modules' ? [] : filesUnder(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });

const reaches = new Map();
function reachesDatabase(file, seen = new Set()) {
  if (reaches.has(file)) return reaches.get(file);
  if (seen.has(file) || !fs.existsSync(file)) return false;
  seen.add(file);
  const text = fs.readFileSync(file, 'utf8');
  let found = USES_DATABASE.test(text);
  for (const [, target] of found ? [] : text.matchAll(RELATIVE_IMPORT)) {
    const imported = path.normalize(path.join(path.dirname(file), target));
    // Only the project's own test helpers: the code under test does not pick the test database.
    if (imported.startsWith(`test${path.sep}`) && reachesDatabase(imported, seen)) {
      found = true;
      break;
    }
  }
  reaches.set(file, found);
  return found;
}

const tests = ROOTS.flatMap(filesUnder)
  .filter((file) => file.endsWith('.test.ts') && reachesDatabase(file))
  .sort();
process.stdout.write(tests.map((file) => `${file}\n`).join(''));
