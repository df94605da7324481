import { createHmac } from 'node:crypto';
import { invalid } from '../../core/common/errors.ts';
import { joinRemote } from '../../core/dissemination/deliver.ts';
import type { HostConnection, OutgoingFile } from '../../core/dissemination/methods.ts';

const KIB = 1024;
const MIB = 1024 * KIB;
/** A block holds at most 4000 MiB, a block blob at most 50,000 blocks. */
export const MAX_BLOCK_SIZE = 4000 * MIB;
export const MAX_BLOCKS = 50_000;
/** The REST API version the requests are written for (and signed with). */
export const AZURE_VERSION = '2021-08-06';

/** The `azure.*` options, with the reference's names. */
export interface AzureSettings {
  /** Files of at least this many bytes go in blocks of `blockSize`, several at once. */
  multipartSize: number;
  blockSize: number;
  /** Blocks in flight at once. */
  numBuffers: number;
  /** Content-MD5 on each block, and the whole file's MD5 stored with the blob. */
  useMD5: boolean;
}

/** `256m`, `4m`, `10k`, `1g` or bare bytes; anything else is the default. */
export function readSize(value: string | undefined, fallback: number): number {
  const match = /^\s*(\d+)\s*([kmg])?b?\s*$/i.exec(value ?? '');
  if (!match) return fallback;
  const unit = { k: KIB, m: MIB, g: 1024 * MIB }[(match[2] ?? '').toLowerCase() as 'k' | 'm' | 'g'] ?? 1;
  const size = Number(match[1]) * unit;
  return Number.isSafeInteger(size) && size > 0 ? size : fallback;
}

export function azureSettings(raw: ReadonlyMap<string, string>, readFlag: (v?: string) => boolean): AzureSettings {
  const buffers = Number(raw.get('numBuffers')?.trim() || Number.NaN);
  return {
    multipartSize: Math.min(readSize(raw.get('multipartSize'), 256 * MIB), MAX_BLOCK_SIZE),
    blockSize: Math.min(readSize(raw.get('blockSize'), 4 * MIB), MAX_BLOCK_SIZE),
    numBuffers: Number.isSafeInteger(buffers) && buffers > 0 ? buffers : 5,
    useMD5: readFlag(raw.get('useMD5')),
  };
}

/** The block size for a file: the option's, grown when the file would need more than 50,000 blocks. */
export const blockSizeFor = (settings: AzureSettings, size: number) =>
  size < settings.multipartSize ? Math.max(size, 1) : Math.max(settings.blockSize, Math.ceil(size / MAX_BLOCKS));

export interface AzureBlob {
  /** The blob's URL, without a query. */
  url: URL;
  /** `container/blob`, for messages. */
  label: string;
}

/**
 * Where the file goes: `azure.url` when set (an emulator's `http://127.0.0.1:10000/devstoreaccount1`,
 * a sovereign cloud), else `<azure.scheme>://<host>[:port]` (https by default). The container is
 * `azure.containerName`, or else the first segment of the directory and target joined; the rest
 * is the blob's name.
 */
export function azureBlob(host: HostConnection, file: OutgoingFile): AzureBlob {
  const path = joinRemote(host.directory, file.target).replace(/^\/+/, '');
  const { container, name } = containerAndName(host, path);
  if (container === '' || name === '') {
    throw invalid(`No Azure container and blob in ${path}: set azure.containerName or give it as the first directory`);
  }
  const encoded = [container, ...name.split('/')].map(encodeURIComponent).join('/');
  return { url: new URL(`${accountUrl(host)}/${encoded}`), label: `${container}/${name}` };
}

/** A listing's container (`url`, without a query) and the prefix of the blobs it lists. */
export interface AzureListing extends AzureBlob {
  prefix: string;
}

/**
 * What a listing of `directory` (from the account's root) asks for. Split as `azureBlob` splits
 * `<directory>/<name>`, so that each blob listed is the one a fetch of that path reads, in the same
 * container, whichever way `directory` is slashed.
 */
export function azureListing(host: HostConnection, directory: string): AzureListing {
  const path = `${directory.replace(/\/+$/, '')}/`.replace(/^\/+/, '');
  const { container, name: prefix } = containerAndName(host, path);
  if (container === '') {
    throw invalid(`No Azure container in ${directory}: set azure.containerName or give it as the first directory`);
  }
  return {
    url: new URL(`${accountUrl(host)}/${encodeURIComponent(container)}`),
    label: `${container}/${prefix}`,
    prefix,
  };
}

/** `azure.containerName` and the whole path, or else the path's first segment and what follows it. */
function containerAndName(host: HostConnection, path: string) {
  const named = host.options.raw.get('containerName')?.trim() ?? '';
  if (named !== '') return { container: named, name: path };
  const slash = path.indexOf('/');
  return { container: slash > 0 ? path.slice(0, slash) : '', name: path.slice(slash + 1) };
}

/** The account's endpoint, without a trailing slash. */
function accountUrl(host: HostConnection) {
  const endpoint = azureEndpoint(host);
  return `${endpoint.origin}${endpoint.pathname.replace(/\/+$/, '')}`;
}

function azureEndpoint(host: HostConnection): URL {
  const url = host.options.raw.get('url')?.trim();
  if (url) return new URL(url);
  const name = host.hostname.trim();
  if (name === '') throw invalid('The Azure host has no name: give the account endpoint, or set azure.url');
  const scheme = host.options.raw.get('scheme')?.trim().toLowerCase() || 'https';
  if (scheme !== 'http' && scheme !== 'https') throw invalid(`azure.scheme must be http or https, not ${scheme}`);
  const bracketed = name.includes(':') && !name.startsWith('[') ? `[${name}]` : name;
  const port = host.options.port === null ? '' : `:${host.options.port}`;
  return new URL(`${scheme}://${bracketed}${port}`);
}

/** The standard headers Shared Key signs, in its order (`Date` empty: `x-ms-date` is signed instead). */
const SIGNED_STANDARD = [
  'content-encoding',
  'content-language',
  'content-length',
  'content-md5',
  'content-type',
  'date',
  'if-modified-since',
  'if-match',
  'if-none-match',
  'if-unmodified-since',
  'range',
];

/**
 * The `Authorization: SharedKey <account>:<signature>` of a request (the Blob service's Shared Key
 * scheme): an HMAC-SHA256, under the base64 account key, of the verb, the standard headers, the
 * `x-ms-` headers and the resource with its query.
 */
export function sharedKey(
  account: string,
  key: string,
  method: string,
  url: URL,
  headers: Record<string, string>,
): string {
  const lower = new Map(Object.entries(headers).map(([n, v]) => [n.toLowerCase(), v.trim()]));
  // An empty body signs an empty length (API versions from 2015-02-21).
  const standard = SIGNED_STANDARD.map((n) =>
    n === 'content-length' && lower.get(n) === '0' ? '' : (lower.get(n) ?? ''),
  );
  const msHeaders = [...lower.keys()]
    .filter((n) => n.startsWith('x-ms-'))
    .sort()
    .map((n) => `${n}:${lower.get(n)}\n`)
    .join('');
  const params = new Map<string, string[]>();
  for (const [n, v] of url.searchParams) params.set(n.toLowerCase(), [...(params.get(n.toLowerCase()) ?? []), v]);
  const query = [...params.keys()]
    .sort()
    .map((n) => `\n${n}:${params.get(n)!.sort().join(',')}`)
    .join('');
  const toSign = `${method}\n${standard.join('\n')}\n${msHeaders}/${account}${url.pathname}${query}`;
  const signature = createHmac('sha256', Buffer.from(key, 'base64')).update(toSign, 'utf8').digest('base64');
  return `SharedKey ${account}:${signature}`;
}
