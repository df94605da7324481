import { isServiceError } from '../../core/common/errors.ts';
import { PortalLoginRefused } from '../../core/portal/access.ts';
import { LOGIN_FAILED } from '../../core/portal/login.ts';
import type { Logger } from '../../core/ports.ts';
import { isDatabaseUnavailable } from '../../db/errors.ts';
import { plain } from '../http/errors.ts';

/** The portal's answers: plain text, the same words whatever the reason behind them. */
export const LOGIN_REALM = { 'WWW-Authenticate': 'Basic realm="Data Portal"' };

export const loginFailed = () => plain(401, LOGIN_FAILED, LOGIN_REALM);
export const notFoundAnswer = () => plain(404, 'Not found');
export const permissionDenied = () => plain(403, 'Permission denied');
/** Over a limit that passes with time (connections, quotas): try again later. */
const RETRY_OVER_LIMIT_SECONDS = 30;

/** Thrown by the portal's routes to end a request with this answer (through the sub-app's onError). */
export class PortalAnswer extends Error {
  constructor(readonly response: Response) {
    super(`portal answer ${response.status}`);
  }
}

/**
 * The one mapping of the portal's failures to answers. A refused login is always `Login failed`
 * (its reason went to the DEA line): 401 with the realm, or 429 when it passes with time.
 */
export function portalError(error: unknown, requestId: string, logger: Logger): Response {
  if (error instanceof PortalAnswer) return error.response;
  if (isServiceError(error)) {
    switch (error.kind) {
      case 'unauthorized':
        return error instanceof PortalLoginRefused && error.overLimit
          ? plain(429, LOGIN_FAILED, { 'Retry-After': String(RETRY_OVER_LIMIT_SECONDS) })
          : loginFailed();
      case 'throttled':
        return plain(429, error.message, { 'Retry-After': String(error.retryAfterSeconds ?? 60) });
      case 'notFound':
        return notFoundAnswer();
      case 'badRequest':
      case 'missingParameter':
      case 'invalid':
        return plain(400, error.message);
      case 'conflict':
        return plain(409, error.message);
      case 'tooLarge':
        return plain(413, error.message);
      case 'unavailable':
        logger.warn('service unavailable', { requestId, message: error.message });
        return plain(503, error.message);
    }
  }
  if (isDatabaseUnavailable(error)) {
    logger.warn('database unavailable', { requestId, reason: messageOfCause(error) });
    return plain(503, 'Service unavailable: database unreachable');
  }
  logger.error('portal internal error', { requestId, reason: messageOfCause(error) });
  return plain(500, `Internal error (request ${requestId})`);
}

/** The innermost message only: a driver's wrapper repeats the statement and its parameters. */
function messageOfCause(error: unknown): string {
  let e: unknown = error;
  while (e && typeof e === 'object' && 'cause' in e && e.cause) e = e.cause;
  return e instanceof Error ? e.message : String(e);
}
