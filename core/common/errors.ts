/**
 * One error type for every failure a handler can report. Each transport maps the kind to
 * its own wire form exactly once (the HTTP mapping lives in functions/http/errors.ts).
 */
export type ServiceErrorKind =
  | 'notFound'
  | 'invalid'
  | 'conflict'
  | 'unauthorized'
  | 'missingParameter'
  | 'badRequest'
  | 'tooLarge'
  | 'throttled'
  | 'unavailable';

export class ServiceError extends Error {
  constructor(
    readonly kind: ServiceErrorKind,
    message: string,
    /** For `throttled`: seconds until a retry can succeed. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'ServiceError';
  }
}

export const notFound = (message: string) => new ServiceError('notFound', message);
export const invalid = (message: string) => new ServiceError('invalid', message);
export const conflict = (message: string) => new ServiceError('conflict', message);
export const unauthorized = () => new ServiceError('unauthorized', 'User not authorized');
export const missingParameter = (name: string) => new ServiceError('missingParameter', `Missing parameter: ${name}`);
export const badRequest = (message: string) => new ServiceError('badRequest', message);
export const throttled = (message: string, retryAfterSeconds: number) =>
  new ServiceError('throttled', message, retryAfterSeconds);
/** A wait as Retry-After seconds: whole, rounded up, at least 1. */
export const retryAfterSeconds = (waitMs: number) => Math.max(1, Math.ceil(waitMs / 1000));
export const unavailable = (reason: string) => new ServiceError('unavailable', `Service unavailable: ${reason}`);

/** What an error says, whatever was thrown. */
export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

export const isServiceError = (e: unknown): e is ServiceError => e instanceof ServiceError;
