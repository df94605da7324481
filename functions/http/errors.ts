import { isServiceError } from '../../core/common/errors.ts';
import type { Logger } from '../../core/ports.ts';
import { isDatabaseUnavailable } from '../../db/errors.ts';

export const PLAIN = { 'content-type': 'text/plain; charset=UTF-8' };

export const plain = (status: number, text: string, headers: Record<string, string> = {}) =>
  new Response(text, { status, headers: { ...PLAIN, ...headers } });

// Written out rather than Response.json, whose content type differs between runtimes (Bun adds a charset).
const jsonError = (status: number, message: string) =>
  new Response(JSON.stringify({ status: 'error', message }), {
    status,
    headers: { 'content-type': 'application/json' },
  });

/** The one place where a failure becomes its wire form (wire-decisions §1). */
export function errorResponse(error: unknown, requestId: string, logger: Logger): Response {
  if (isServiceError(error)) {
    switch (error.kind) {
      case 'missingParameter':
        return plain(412, error.message);
      case 'badRequest':
        return plain(400, error.message);
      case 'tooLarge':
        return plain(413, error.message);
      case 'throttled':
        return plain(429, error.message, { 'Retry-After': String(error.retryAfterSeconds ?? 60) });
      case 'unavailable':
        logger.warn('service unavailable', { requestId, message: error.message });
        return jsonError(503, error.message);
      default:
        logger.info('service error', { requestId, kind: error.kind, message: error.message });
        return jsonError(500, error.message);
    }
  }
  if (isDatabaseUnavailable(error)) {
    logger.warn('database unavailable', { requestId, reason: describe(error) });
    return jsonError(503, 'Service unavailable: database unreachable');
  }
  logger.error('internal error', { requestId, reason: describe(error) });
  return jsonError(500, `Internal error (request ${requestId})`);
}

/** The innermost message only: a driver's wrapper repeats the statement and its parameters. */
function describe(error: unknown): string {
  let e: unknown = error;
  while (e && typeof e === 'object' && 'cause' in e && e.cause) e = e.cause;
  return e instanceof Error ? e.message : String(e);
}
