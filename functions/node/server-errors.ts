import type { EventEmitter } from 'node:events';
import type { Logger } from '../../core/ports.ts';

/**
 * Logs the errors of a server once it listens, which would otherwise end the process: an accept
 * that fails (EMFILE when out of file descriptors) leaves the server listening, and the next accept
 * may succeed.
 */
export function logServerErrors(server: EventEmitter, logger: Logger, msg: string) {
  server.on('error', (e: NodeJS.ErrnoException) => logger.error(msg, { code: e.code, reason: e.message }));
}
