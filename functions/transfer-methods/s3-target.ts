import { invalid } from '../../core/common/errors.ts';
import { joinRemote } from '../../core/dissemination/deliver.ts';
import { readFlag } from '../../core/dissemination/method-options.ts';
import type { HostConnection, OutgoingFile } from '../../core/dissemination/methods.ts';
import { encodeKey } from './s3-wire.ts';

const MIB = 1024 * 1024;
/** S3 refuses parts under 5 MiB (but the last) and single PUTs over 5 GiB. */
export const MIN_PART_SIZE = 5 * MIB;
export const MAX_SINGLE_PUT = 5 * 1024 * MIB;
export const MAX_PARTS = 10_000;

/** The `s3.*` options, with the reference's names. */
export interface S3Settings {
  region: string;
  pathStyle: boolean;
  /** Files of at least this many bytes go multipart. */
  multipartSize: number;
  partSize: number;
  threads: number;
}

const positive = (value: string | undefined, fallback: number) => {
  const n = Number(value?.trim() || Number.NaN);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
};

export function s3Settings(raw: ReadonlyMap<string, string>): S3Settings {
  return {
    region: raw.get('region')?.trim() || 'us-east-1',
    pathStyle: readFlag(raw.get('enablePathStyleAccess'), false),
    // Off unless set, but S3 takes nothing bigger than 5 GiB in one PUT.
    multipartSize: Math.min(positive(raw.get('multipartSize'), MAX_SINGLE_PUT + 1), MAX_SINGLE_PUT + 1),
    partSize: Math.max(positive(raw.get('partSize'), 10 * MIB), MIN_PART_SIZE),
    threads: positive(raw.get('numUploadThreads'), 2),
  };
}

/** The part size for a file: `partSize`, grown when the file would need more than 10,000 parts. */
export const partSizeFor = (partSize: number, size: number) =>
  Math.max(partSize, Math.ceil(size / MAX_PARTS / MIB) * MIB);

export interface S3Object {
  bucket: string;
  key: string;
  url: URL;
  /** `bucket/key`, for messages. */
  label: string;
}

/**
 * The endpoint: `s3.url` when set (any S3-compatible service, possibly under a path); else the
 * host's name with `s3.scheme` (https by default) and the host's port; else AWS in `s3.region`.
 */
export function s3Endpoint(host: HostConnection, settings: S3Settings): URL {
  const url = host.options.raw.get('url')?.trim();
  if (url) return new URL(url);
  const name = host.hostname.trim();
  if (name === '') return new URL(`https://s3.${settings.region}.amazonaws.com`);
  const scheme = host.options.raw.get('scheme')?.trim().toLowerCase() || 'https';
  const bracketed = name.includes(':') && !name.startsWith('[') ? `[${name}]` : name;
  const port = host.options.port === null ? '' : `:${host.options.port}`;
  return new URL(`${scheme}://${bracketed}${port}`);
}

export const IP_HOST = /^(\d{1,3}(\.\d{1,3}){3}|\[.*\])$/;
/** A bucket that can be a DNS label under the endpoint's name. */
export const DNS_BUCKET = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;

/**
 * Where the file goes. The key is `s3.prefix` + the directory and target joined; without
 * `s3.bucketName` the first segment of that path is the bucket. Virtual-hosted style
 * (`bucket.endpoint/key`) unless `s3.enablePathStyleAccess`, or the endpoint is an IP address,
 * or the bucket is no DNS label (dots, capitals): those go path style (`endpoint/bucket/key`).
 */
export function s3Object(host: HostConnection, file: OutgoingFile, settings: S3Settings): S3Object {
  const path = joinRemote(host.directory, file.target).replace(/^\/+/, '');
  const { bucket, rest } = bucketAndRest(host, path);
  if (bucket === '' || rest === '') {
    throw invalid(`No S3 bucket and key in ${path}: set s3.bucketName or give the bucket as the first directory`);
  }
  const key = (host.options.raw.get('prefix') ?? '') + rest;
  return { bucket, key, url: s3Url(host, settings, bucket, key), label: `${bucket}/${key}` };
}

/**
 * What a listing of `directory` (from the bucket's root) asks for: its `key` is the prefix, its `url`
 * the bucket's. Split as `s3Object` splits `<directory>/<name>`, so that each object listed is the
 * one a fetch of that path reads, in the same bucket, whichever way `directory` is slashed.
 */
export function s3Listing(host: HostConnection, directory: string, settings: S3Settings): S3Object {
  const path = `${directory.replace(/\/+$/, '')}/`.replace(/^\/+/, '');
  const { bucket, rest } = bucketAndRest(host, path);
  if (bucket === '') {
    throw invalid(`No S3 bucket in ${directory}: set s3.bucketName or give the bucket as the first directory`);
  }
  const key = (host.options.raw.get('prefix') ?? '') + rest;
  return { bucket, key, url: s3Url(host, settings, bucket, ''), label: `${bucket}/${key}` };
}

/** `s3.bucketName` and the whole path, or else the path's first segment and what follows it. */
function bucketAndRest(host: HostConnection, path: string) {
  const named = host.options.raw.get('bucketName')?.trim() ?? '';
  if (named !== '') return { bucket: named, rest: path };
  const slash = path.indexOf('/');
  return { bucket: slash > 0 ? path.slice(0, slash) : '', rest: path.slice(slash + 1) };
}

/** The object's URL; with an empty key, the bucket's (`endpoint/bucket`, or `bucket.endpoint/`). */
function s3Url(host: HostConnection, settings: S3Settings, bucket: string, key: string) {
  const endpoint = s3Endpoint(host, settings);
  const base = endpoint.pathname.replace(/\/+$/, '');
  const virtual = !settings.pathStyle && !IP_HOST.test(endpoint.hostname) && DNS_BUCKET.test(bucket);
  if (virtual) return new URL(`${endpoint.protocol}//${bucket}.${endpoint.host}${base}/${encodeKey(key)}`);
  return new URL(`${endpoint.origin}${base}/${encodeKey(bucket)}${key === '' ? '' : `/${encodeKey(key)}`}`);
}
