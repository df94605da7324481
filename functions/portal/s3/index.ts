import { type Context, Hono } from 'hono';
import { mayList } from '../../../core/portal/listing-rule.ts';
import { byteOrder } from '../../../core/portal/tree.ts';
import type { Ports } from '../../../core/ports.ts';
import type { PortalOptions } from '../options.ts';
import { accessDenied, notImplemented, S3Failure, s3ErrorAnswer } from './errors.ts';
import { bucketAnswer, objectAnswer } from './operations.ts';
import { type S3Visitor, s3Visitor } from './who.ts';
import { listBucketsXml, xmlAnswer } from './xml.ts';

/** The S3 endpoint's base path on the main app; the S3 listener (ECPDS_PORTAL_S3_PORT) serves it at its root. */
export const S3_BASE = '/portal/s3';

/** What one S3 request addresses: the buckets, a bucket, or an object of one. */
export interface S3Target {
  bucket: string | null;
  key: string | null;
  /** Named by the Host, in lower case: a destination's name is matched without regard to case. */
  virtualHost: boolean;
}

/** A request's context for the operations: who, where, and the portal's shell. */
export interface S3Request {
  c: Context;
  ports: Ports;
  options: PortalOptions;
  visitor: S3Visitor;
  bucket: string;
  address: string;
  requestId: string;
  /** The query's pairs (X-Amz-* of a presigned URL left out). */
  query: Map<string, string>;
  /** Addressed by its Host: bucket names (a copy's source's too) are matched without regard to case. */
  virtualHost: boolean;
}

/**
 * The data portal as an S3-compatible endpoint below `base`: path style (`<base>/<bucket>/<key>`), or
 * virtual-host style (`<bucket>.<s3Domain><base>/<key>`) when the Host is a name below the
 * configured domain. Buckets are the user's destinations, keys the files' target paths; every error
 * is S3's XML. The signature covers the path as sent: clients that sign as if the bucket were at the
 * root (s3cmd, whose endpoint is a host with no path) need the root, `base` ''.
 */
function s3Handler(options: PortalOptions, base: string) {
  return async (c: Context) => {
    const requestId = (c.get('requestId' as never) as string | undefined) ?? 'unknown';
    const url = new URL(c.req.url);
    const ports = await options.portsFor(c);
    try {
      const host = c.req.header('host') ?? url.host;
      const target = s3Target(url.pathname, host, options.s3Domain ?? null, base);
      const answer = await dispatch(c, options, ports, { ...target, base }, requestId);
      answer.headers.set('x-amz-request-id', requestId);
      return answer;
    } catch (error) {
      return s3ErrorAnswer(error, requestId, ports.logger, url.pathname);
    }
  };
}

/**
 * A request's signature refused below /portal/s3 may be a client's that signs the path without it
 * (s3cmd, whatever path its host_base names): its message names the listener that serves them.
 */
function withListenerHint(error: unknown, base: string) {
  if (base === '' || !(error instanceof S3Failure) || error.code !== 'SignatureDoesNotMatch') return error;
  const hint = ` A client that signs the path without ${base} (s3cmd) needs the S3 listener (ECPDS_PORTAL_S3_PORT).`;
  return new S3Failure(error.status, error.code, error.message + hint, error.headers);
}

/** The endpoint under /portal/s3, for routes mounted under /portal of the main app. */
export function s3Routes(options: PortalOptions) {
  const app = new Hono();
  const serve = s3Handler(options, S3_BASE);
  app.all('/s3', serve);
  app.all('/s3/*', serve);
  return app;
}

/** The endpoint at the root: every path is a bucket or an object (the S3 listener's app). */
export function s3RootRoutes(options: PortalOptions) {
  const app = new Hono();
  app.all('*', s3Handler(options, ''));
  return app;
}

/** The bucket and key of a path below the endpoint, from the path or the virtual host. */
export function s3Target(pathname: string, host: string, domain: string | null, base = S3_BASE): S3Target {
  let rest = pathname.slice(base.length).replace(/^\//, '');
  const name = host.replace(/:\d+$/, '').toLowerCase();
  let bucket: string | null = null;
  const virtualHost = domain !== null && name.endsWith(`.${domain.toLowerCase()}`);
  if (virtualHost) {
    bucket = name.slice(0, -domain.length - 1);
  } else if (rest !== '') {
    const slash = rest.indexOf('/');
    bucket = decode(slash < 0 ? rest : rest.slice(0, slash));
    rest = slash < 0 ? '' : rest.slice(slash + 1);
  }
  const key = rest === '' ? null : decode(rest);
  return { bucket, key, virtualHost };
}

function decode(text: string) {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new S3Failure(400, 'InvalidURI', 'Could not parse the specified URI.');
  }
}

async function dispatch(
  c: Context,
  options: PortalOptions,
  ports: Ports,
  target: S3Target & { base: string },
  requestId: string,
) {
  const address = options.clientAddress(c);
  const visitor = await s3Visitor(c, ports, address, target.bucket).catch((e: unknown) => {
    throw withListenerHint(e, target.base);
  });
  const { identity } = visitor;
  if (target.virtualHost) {
    target.bucket = identity.destinations.find((d) => d.toLowerCase() === target.bucket) ?? target.bucket;
  }
  if (target.bucket === null) {
    if (c.req.method !== 'GET') throw notImplemented();
    if (!mayList(identity, null) || visitor.signed === null) throw accessDenied();
    const names = [...identity.destinations].sort(byteOrder);
    const created = await ports.repos.portal.destinationsCreated(names);
    // A destination removed since the login has no date left: the epoch rather than a made-up one.
    const buckets = names.map((name) => ({ name, created: created.get(name) ?? new Date(0) }));
    return xmlAnswer(listBucketsXml(identity.userId, buckets));
  }
  // The same answer whether the destination exists or not, as the HTTPS portal's 404.
  if (!identity.destinations.includes(target.bucket)) {
    throw new S3Failure(404, 'NoSuchBucket', 'The specified bucket does not exist');
  }
  const query = new Map<string, string>();
  for (const [k, v] of new URLSearchParams(new URL(c.req.url).search)) {
    if (!/^x-amz-/i.test(k)) query.set(k, v);
  }
  const { bucket, virtualHost } = target;
  const request: S3Request = { c, ports, options, visitor, bucket, address, requestId, query, virtualHost };
  return target.key === null ? bucketAnswer(request) : objectAnswer(request, target.key);
}
