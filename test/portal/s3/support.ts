import { AwsV4Signer } from 'aws4fetch';
import type { Harness } from '../../support/harness.ts';

/** S3 requests as an SDK signs them (aws4fetch), sent to the app in this process. */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface S3Call {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Presigned: the signature in the query, valid this many seconds. */
  presign?: number;
  /** The signing time (X-Amz-Date), for requests signed in the past. */
  datetime?: Date;
  /** Signs the payload's SHA-256 rather than UNSIGNED-PAYLOAD. */
  payloadHash?: string;
}

export const BASE = 'https://localhost/portal/s3';

/** Signs a request of `url` with `credentials`, as an SDK would. */
export async function signed(url: string, credentials: S3Credentials, call: S3Call = {}) {
  const target = new URL(url);
  if (call.presign !== undefined) target.searchParams.set('X-Amz-Expires', String(call.presign));
  const headers = { ...call.headers };
  if (call.payloadHash !== undefined) headers['x-amz-content-sha256'] = call.payloadHash;
  const signer = new AwsV4Signer({
    ...credentials,
    url: target.toString(),
    method: call.method ?? 'GET',
    headers,
    body: call.body as never,
    service: 's3',
    region: 'us-east-1',
    signQuery: call.presign !== undefined,
    datetime: call.datetime?.toISOString().replace(/[:-]|\.\d{3}/g, ''),
  });
  return signer.sign();
}

/** A signed (or, without credentials, anonymous) request to the harness's app. */
export async function s3(h: Harness, url: string, credentials: S3Credentials | null, call: S3Call = {}) {
  if (credentials === null) {
    return h.app.request(url, { method: call.method ?? 'GET', headers: call.headers, body: call.body as never });
  }
  const request = await signed(url, credentials, call);
  return h.app.request(request.url.toString(), {
    method: request.method,
    headers: request.headers,
    body: call.body as never,
  });
}

/** The text of one element of an XML answer (the first). */
export const xmlText = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1] ?? null;
export const xmlAll = (xml: string, name: string) =>
  [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, 'g'))].map((m) => m[1]!);
