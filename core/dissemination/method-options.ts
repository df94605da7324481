import { readOptions } from '../hosts/options.ts';
import { type DeliveryExtras, deliveryExtras } from './delivery-options.ts';
import { type FilterOptions, filterOptions } from './filters.ts';

/**
 * The options a transfer method reads from its host's `data`, with the reference's names and
 * defaults (its transfer module documentation). Unknown names are ignored; a value that does not
 * read as its kind falls back to the default, as the reference's setup does.
 */
export type MethodName =
  | 'sftp'
  | 'ftp'
  | 'ftps'
  | 's3'
  | 'http'
  | 'r2'
  | 'azure'
  | 'webdav'
  | 'file'
  | 'test'
  | 'portal';

export interface TemporaryName {
  /** Upload under a temporary name, then rename into place (S3, HTTP, R2 and Azure never need one). */
  use: boolean;
  prefix: string;
  suffix: string;
}

export interface MethodOptions {
  method: MethodName;
  /** Port to connect to; from `host` (`name:port`) before the method's own `port` option. */
  port: number | null;
  temporary: TemporaryName;
  /** Create missing target directories. */
  makeDirectories: boolean;
  /** Skip comparing the remote size with the bytes sent. */
  ignoreCheck: boolean;
  connectTimeoutMs: number;
  /** No limit when null. */
  putTimeoutMs: number | null;
  /** A send that moves no byte for this long has stalled: it fails as the host's failure. */
  streamTimeoutMs: number;
  /** The sidecar, command and raw FTP commands around the upload. */
  extras: DeliveryExtras;
  /** Which files the host's compression filter applies to (`ectrans.filterpattern`, `filterMinimumSize`). */
  filter: FilterOptions;
  /** The module's own options by key (`passive`, `bucketName`, `scheme`, …), as text. */
  raw: ReadonlyMap<string, string>;
}

const SECOND = 1000;

/** Whether some mover (a Node one, the edge) has a transfer method of this name. */
export function isMethodName(name: string | null): name is MethodName {
  return name !== null && Object.hasOwn(DEFAULT_PORTS, name);
}

const DEFAULT_PORTS: Record<MethodName, number | null> = {
  sftp: 22,
  ftp: 21,
  ftps: 21,
  s3: null,
  http: null,
  r2: null,
  azure: null,
  webdav: null,
  file: null,
  test: null,
  portal: null,
};

/** `true`/`yes`/`1` and `false`/`no`/`0`, in any case; anything else is the default. */
export function readFlag(value: string | undefined, fallback: boolean): boolean {
  const v = value?.trim().toLowerCase();
  if (v === 'true' || v === 'yes' || v === '1') return true;
  if (v === 'false' || v === 'no' || v === '0') return false;
  return fallback;
}

/** A duration: bare milliseconds, or a number with `ms`, `s`, `m` or `h`; anything else is the default. */
export function readDuration(value: string | undefined, fallback: number | null): number | null {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/i.exec(value ?? '');
  if (!match) return fallback;
  const unit = { ms: 1, s: SECOND, m: 60 * SECOND, h: 3600 * SECOND }[(match[2] ?? 'ms').toLowerCase()]!;
  return Math.round(Number(match[1]) * unit);
}

function readPort(value: string | undefined): number | null {
  if (value === undefined || !/^\s*\d+\s*$/.test(value)) return null;
  const port = Number(value);
  return port >= 1 && port <= 65535 ? port : null;
}

/** `name` or `name:port` (IPv6 in brackets: `[::1]:2222`). */
export function splitHostPort(host: string): { hostname: string; port: number | null } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(host);
  if (bracketed) return { hostname: bracketed[1]!, port: readPort(bracketed[2]) };
  const colon = host.lastIndexOf(':');
  if (colon > 0 && host.indexOf(':') === colon) {
    const port = readPort(host.slice(colon + 1));
    if (port !== null) return { hostname: host.slice(0, colon), port };
  }
  return { hostname: host, port: null };
}

export function methodOptions(method: MethodName, host: string, data: string): MethodOptions {
  const all = readOptions(data);
  const prefix = `${method}.`;
  const raw = new Map<string, string>();
  for (const [name, value] of all) if (name.startsWith(prefix)) raw.set(name.slice(prefix.length), value);

  const implicitTls = method === 'ftps' && raw.get('connectionType')?.toUpperCase() === 'FTPS';
  const defaultPort = implicitTls ? 990 : DEFAULT_PORTS[method];
  const atomicUpload = method === 's3' || method === 'http' || method === 'r2' || method === 'azure';
  const prefixOption = raw.get('prefix') ?? '';
  const suffixOption = raw.get('suffix') ?? '';
  return {
    method,
    port: splitHostPort(host).port ?? readPort(raw.get('port')) ?? defaultPort,
    temporary: {
      use: !atomicUpload && readFlag(raw.get('usetmp'), true),
      prefix: prefixOption,
      // Neither a prefix nor a suffix given: `.tmp`, as the reference does.
      suffix: prefixOption === '' && suffixOption === '' ? '.tmp' : suffixOption,
    },
    makeDirectories: readFlag(raw.get('mkdirs'), true),
    // The reference checks the size after an SFTP upload by default, and trusts FTP servers and Azure.
    ignoreCheck: readFlag(raw.get('ignoreCheck'), method === 'ftp' || method === 'ftps' || method === 'azure'),
    connectTimeoutMs: readDuration(all.get('ectrans.connectTimeOut'), 60 * SECOND)!,
    putTimeoutMs: readDuration(all.get('ectrans.putTimeOut'), null),
    streamTimeoutMs: readDuration(all.get('ectrans.streamTimeout'), 5 * 60 * SECOND)!,
    extras: deliveryExtras(raw, readFlag(all.get('ectrans.createChecksum'), false)),
    filter: filterOptions(all),
    raw,
  };
}
