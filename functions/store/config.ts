import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../env.ts';
import type { S3Credentials } from '../transfer-methods/s3-wire.ts';

/**
 * Where the service keeps its copy of every registered file, from the environment:
 * - `ECPDS_STORE_URL` unset: a directory, `<data dir>/store` (`path` absent);
 * - `ECPDS_STORE_URL=/abs/path` or `file:///abs/path`: a directory there;
 * - `ECPDS_STORE_URL=s3://<bucket>[/<prefix>]`: an S3-compatible bucket, with
 *   `ECPDS_STORE_S3_ENDPOINT` (any S3-compatible service, addressed path style; unset: AWS),
 *   `ECPDS_STORE_S3_REGION` (else `AWS_REGION`, else us-east-1) and the credentials in
 *   `ECPDS_STORE_S3_ACCESS_KEY_ID` / `ECPDS_STORE_S3_SECRET_ACCESS_KEY`, else `AWS_ACCESS_KEY_ID` /
 *   `AWS_SECRET_ACCESS_KEY` (with `AWS_SESSION_TOKEN` when set).
 *
 * Parsed once at start, next to the rest of the Node configuration: a wrong value throws a
 * ConfigError naming the variable. The `s3` variant is the options of `s3ObjectStore` as they are;
 * its credentials keep the secret out of JSON and of `util.inspect`, so the configuration may be
 * logged. The server then checks the store with `probeStore` (core/store/probe.ts) before serving.
 */
export type StoreConfig = DirectoryStoreConfig | S3StoreConfig;

export interface DirectoryStoreConfig {
  kind: 'directory';
  /** An absolute path; absent: `<data dir>/store`. */
  path?: string;
}

export interface S3StoreConfig {
  kind: 's3';
  bucket: string;
  /** Without slashes around it; '' for the bucket's root. */
  prefix: string;
  /** The service's URL (path style); null: AWS, virtual-hosted style. */
  endpoint: string | null;
  region: string;
  credentials: S3Credentials;
}

type Env = Readonly<Record<string, string | undefined>>;

const S3_VARIABLES = [
  'ECPDS_STORE_S3_ENDPOINT',
  'ECPDS_STORE_S3_REGION',
  'ECPDS_STORE_S3_ACCESS_KEY_ID',
  'ECPDS_STORE_S3_SECRET_ACCESS_KEY',
];
const URL_SHAPE = 'ECPDS_STORE_URL must be an absolute path, a file:/// URL or s3://<bucket>[/<prefix>]';

export function parseStoreConfig(env: Env): StoreConfig {
  const value = (name: string) => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? null : v;
  };
  const url = value('ECPDS_STORE_URL');
  if (url === null || !/^s3:/i.test(url)) {
    const stray = S3_VARIABLES.find((name) => value(name) !== null);
    if (stray) throw new ConfigError(`${stray} is set, but ECPDS_STORE_URL names no s3:// bucket`);
    return url === null ? { kind: 'directory' } : { kind: 'directory', path: directoryPath(url) };
  }
  const { bucket, prefix } = bucketAndPrefix(url);
  return {
    kind: 's3',
    bucket,
    prefix,
    endpoint: endpoint(value('ECPDS_STORE_S3_ENDPOINT')),
    region: region(value('ECPDS_STORE_S3_REGION'), value('AWS_REGION')),
    credentials: credentials(value),
  };
}

function directoryPath(url: string): string {
  if (/^file:/i.test(url)) {
    let file: string;
    try {
      file = fileURLToPath(url);
    } catch {
      throw new ConfigError(`${URL_SHAPE}; the file: URL given names no local path ('${url.slice(0, 200)}')`);
    }
    return path.resolve(file);
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new ConfigError(`${URL_SHAPE}; got the scheme '${url.slice(0, url.indexOf(':')).slice(0, 20)}'`);
  }
  if (!path.isAbsolute(url)) throw new ConfigError(`${URL_SHAPE}; got the relative path '${url.slice(0, 200)}'`);
  return path.resolve(url);
}

/** S3's rule, loosened for the older buckets some services still hold (capitals, underscores). */
const BUCKET = /^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$/;

function bucketAndPrefix(url: string) {
  const rest = url.replace(/^s3:\/\//i, '');
  if (rest === url) throw new ConfigError(`${URL_SHAPE}; got an s3: value without '//'`);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  // Never echoed: a value with credentials in it would put them in the message.
  if (bucket.includes('@')) throw new ConfigError(`${URL_SHAPE}; it takes no credentials (see ECPDS_STORE_S3_*)`);
  if (!BUCKET.test(bucket)) throw new ConfigError(`${URL_SHAPE}; '${bucket.slice(0, 80)}' is no bucket name`);
  const prefix = slash < 0 ? '' : rest.slice(slash + 1).replace(/^\/+|\/+$/g, '');
  if (/[?#]/.test(prefix)) throw new ConfigError(`${URL_SHAPE}; it takes no query or fragment`);
  if (prefix.split('/').some((s) => s === '.' || s === '..')) {
    throw new ConfigError(`${URL_SHAPE}; the prefix has a '.' or '..' segment`);
  }
  return { bucket, prefix };
}

const ENDPOINT_SHAPE =
  'ECPDS_STORE_S3_ENDPOINT must be the http(s):// URL of the S3 service, e.g. http://127.0.0.1:9000';

function endpoint(text: string | null): string | null {
  if (text === null) return null;
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new ConfigError(`${ENDPOINT_SHAPE}; the value given is not a URL`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new ConfigError(`${ENDPOINT_SHAPE}; got the scheme '${parsed.protocol.slice(0, 20)}'`);
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new ConfigError(`${ENDPOINT_SHAPE}; it takes no credentials (see ECPDS_STORE_S3_ACCESS_KEY_ID)`);
  }
  if (parsed.search !== '' || parsed.hash !== '')
    throw new ConfigError(`${ENDPOINT_SHAPE}; it takes no query or fragment`);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`;
}

function region(own: string | null, aws: string | null): string {
  const [name, text] = own !== null ? ['ECPDS_STORE_S3_REGION', own] : ['AWS_REGION', aws ?? 'us-east-1'];
  if (/^[a-z0-9][a-z0-9-]{0,62}$/.test(text)) return text;
  throw new ConfigError(`${name} must be a region name such as eu-west-1, got '${text.slice(0, 80)}'`);
}

function credentials(value: (name: string) => string | null): S3Credentials {
  const id = value('ECPDS_STORE_S3_ACCESS_KEY_ID');
  const secret = value('ECPDS_STORE_S3_SECRET_ACCESS_KEY');
  if (id !== null || secret !== null) {
    if (id === null || secret === null) {
      throw new ConfigError('ECPDS_STORE_S3_ACCESS_KEY_ID and ECPDS_STORE_S3_SECRET_ACCESS_KEY must be given together');
    }
    return new SealedCredentials(id, secret, null);
  }
  const awsId = value('AWS_ACCESS_KEY_ID');
  const awsSecret = value('AWS_SECRET_ACCESS_KEY');
  if (awsId === null || awsSecret === null) {
    throw new ConfigError(
      'An s3:// ECPDS_STORE_URL needs credentials: ECPDS_STORE_S3_ACCESS_KEY_ID and ECPDS_STORE_S3_SECRET_ACCESS_KEY ' +
        '(or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)',
    );
  }
  return new SealedCredentials(awsId, awsSecret, value('AWS_SESSION_TOKEN'));
}

/** Credentials whose secret and token JSON, logs and `util.inspect` never show. */
class SealedCredentials implements S3Credentials {
  readonly #secret: string;
  readonly #token: string | null;

  constructor(
    readonly accessKeyId: string,
    secretAccessKey: string,
    sessionToken: string | null,
  ) {
    this.#secret = secretAccessKey;
    this.#token = sessionToken;
  }

  get secretAccessKey() {
    return this.#secret;
  }

  get sessionToken() {
    return this.#token;
  }

  toJSON() {
    return { accessKeyId: this.accessKeyId, secretAccessKey: '[redacted]' };
  }
}
