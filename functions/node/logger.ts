import type { Logger } from '../../core/ports.ts';

/** One JSON object per line on stdout. Callers never pass secrets or Authorization values. */
export function jsonLogger(write: (line: string) => void = (l) => process.stdout.write(l)): Logger {
  const log = (level: string) => (msg: string, fields: Record<string, unknown> = {}) =>
    write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
  return { info: log('info'), warn: log('warn'), error: log('error') };
}
