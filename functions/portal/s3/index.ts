import { type Context, Hono } from 'hono';
import { mayList } from '../../../core/portal/listing-rule.ts';
import { byteOrder } from '../../../core/portal/tree.ts';
import type { Ports } from '../../../core/ports.ts';
import type { PortalOptions } from '../options.ts';
import { accessDenied, notImplemented, S3Failure, s3ErrorAnswer } from './errors.ts';
import { bucketAnswer, objectAnswer } from './operations.ts';
import { type S3Visitor, s3Visitor } from './who.ts';
import { listBucketsXml, xmlAnswer } from './xml.ts';

/** The S3 endpoint's base path on the app. */
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
}

/**
 * The data portal as an S3-compatible endpoint under /portal/s3: path style
 * (`/portal/s3/<bucket>/<key>`), or virtual-host style (`<bucket>.<s3Domain>/portal/s3/<key>`) when
 * the Host is a name below the configured domain. Buckets are the user's destinations, keys the
 * files' target paths; every error is S3's XML.
 */
export function s3Routes(options: PortalOptions) {
  const app = new Hono();
  const serve = async (c: Context) => {
    const requestId = (c.get('requestId' as never) as string | undefined) ?? 'unknown';
    const url = new URL(c.req.url);
    const ports = await options.portsFor(c);
    try {
      const target = s3Target(url.pathname, c.req.header('host') ?? url.host, options.s3Domain ?? null);
      const answer = await dispatch(c, options, ports, target, requestId);
      answer.headers.set('x-amz-request-id', requestId);
      return answer;
    } catch (error) {
      return s3ErrorAnswer(error, requestId, ports.logger, url.pathname);
    }
  };
  app.all('/s3', serve);
  app.all('/s3/*', serve);
  return app;
}

/** The bucket and key of a path below the endpoint, from the path or the virtual host. */
export function s3Target(pathname: string, host: string, domain: string | null): S3Target {
  let rest = pathname.slice(S3_BASE.length).replace(/^\//, '');
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

async function dispatch(c: Context, options: PortalOptions, ports: Ports, target: S3Target, requestId: string) {
  const address = options.clientAddress(c);
  const visitor = await s3Visitor(c, ports, address, target.bucket);
  const { identity } = visitor;
  if (target.virtualHost) {
    target.bucket = identity.destinations.find((d) => d.toLowerCase() === target.bucket) ?? target.bucket;
  }
  if (target.bucket === null) {
    if (c.req.method !== 'GET') throw notImplemented();
    if (!mayList(identity, null) || visitor.signed === null) throw accessDenied();
    const buckets = [...identity.destinations].sort(byteOrder);
    return xmlAnswer(listBucketsXml(identity.userId, buckets, new Date(0)));
  }
  // The same answer whether the destination exists or not, as the HTTPS portal's 404.
  if (!identity.destinations.includes(target.bucket)) {
    throw new S3Failure(404, 'NoSuchBucket', 'The specified bucket does not exist');
  }
  const query = new Map<string, string>();
  for (const [k, v] of new URLSearchParams(new URL(c.req.url).search)) {
    if (!/^x-amz-/i.test(k)) query.set(k, v);
  }
  const request: S3Request = { c, ports, options, visitor, bucket: target.bucket, address, requestId, query };
  return target.key === null ? bucketAnswer(request) : objectAnswer(request, target.key);
}
