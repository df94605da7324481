import { isServiceError } from '../../../core/common/errors.ts';
import { PortalLoginRefused } from '../../../core/portal/access.ts';
import type { Logger } from '../../../core/ports.ts';
import { isDatabaseUnavailable } from '../../../db/errors.ts';
import { PortalAnswer } from '../errors.ts';
import { s3Error } from './xml.ts';

/** A request refused in S3's terms. */
export class S3Failure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const accessDenied = () => new S3Failure(403, 'AccessDenied', 'Access Denied');
export const notImplemented = (
  what = 'A header or query you provided implies functionality that is not implemented.',
) => new S3Failure(501, 'NotImplemented', what);

/** Over a limit that passes with time (connections, quotas): S3's word for trying again later. */
const RETRY_SECONDS = 30;

/** The one mapping of the endpoint's failures to S3 error answers. */
export async function s3ErrorAnswer(error: unknown, requestId: string, logger: Logger, resource: string) {
  const answer = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
    s3Error(status, code, message, { requestId, resource, headers });
  if (error instanceof S3Failure) return answer(error.status, error.code, error.message, error.headers);
  if (error instanceof PortalAnswer) return fromPlain(error.response, answer);
  if (error instanceof PortalLoginRefused) {
    return error.overLimit
      ? answer(503, 'SlowDown', 'Please reduce your request rate.', { 'retry-after': String(RETRY_SECONDS) })
      : answer(403, 'AccessDenied', 'Access Denied');
  }
  if (isServiceError(error)) {
    switch (error.kind) {
      case 'throttled':
        return answer(503, 'SlowDown', error.message, { 'retry-after': String(error.retryAfterSeconds ?? 60) });
      case 'notFound':
        return answer(404, 'NoSuchKey', error.message);
      case 'conflict':
        return answer(409, 'OperationAborted', error.message);
      case 'tooLarge':
        return answer(400, 'EntityTooLarge', error.message);
      case 'unauthorized':
        return answer(403, 'AccessDenied', 'Access Denied');
      case 'unavailable':
        logger.warn('service unavailable', { requestId, message: error.message });
        return answer(503, 'ServiceUnavailable', error.message);
      default:
        return answer(400, 'InvalidRequest', error.message);
    }
  }
  if (isDatabaseUnavailable(error)) {
    logger.warn('database unavailable', { requestId });
    return answer(503, 'ServiceUnavailable', 'Service unavailable: database unreachable');
  }
  logger.error('portal s3 internal error', {
    requestId,
    reason: error instanceof Error ? error.message : String(error),
  });
  return answer(500, 'InternalError', `We encountered an internal error (request ${requestId}). Please try again.`);
}

/** The HTTPS portal's plain answers (its uploads, its downloads' refusals) in S3's words. */
async function fromPlain(
  response: Response,
  answer: (status: number, code: string, message: string, headers?: Record<string, string>) => Response,
) {
  const codes: Record<number, string> = {
    400: 'InvalidRequest',
    403: 'AccessDenied',
    404: 'NoSuchKey',
    409: 'OperationAborted',
    413: 'EntityTooLarge',
    501: 'NotImplemented',
    502: 'InternalError',
  };
  const message = (await response.text().catch(() => '')).slice(0, 500) || 'Refused';
  return answer(response.status, codes[response.status] ?? 'InternalError', message);
}
