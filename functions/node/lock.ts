import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from './config.ts';

/**
 * PGlite has no locking across processes: a second process opening the same data dir would
 * corrupt it. The server holds `server.lock` (its pid) while it runs; others refuse.
 */
const lockFile = (dataDir: string) => path.join(dataDir, 'server.lock');

/** The pid of the running server that holds the data dir (not this process), or null. */
export function holder(dataDir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(lockFile(dataDir), 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return null;
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

export function assertNotHeld(dataDir: string) {
  const pid = holder(dataDir);
  if (pid !== null) {
    throw new ConfigError(
      `the embedded database in ${dataDir} is in use by a running server (pid ${pid}); ` +
        'stop it first, or point both at Postgres with DATABASE_URL',
    );
  }
}

export function acquire(dataDir: string): () => void {
  assertNotHeld(dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(lockFile(dataDir), `${process.pid}\n`);
  return () => fs.rmSync(lockFile(dataDir), { force: true });
}
