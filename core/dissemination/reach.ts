import { methodOptions, splitHostPort } from './method-options.ts';
import type { DisseminationHost } from './ports.ts';

/**
 * Which dissemination hosts a Worker can deliver to. A Worker has no sockets of its own (only
 * fetch, which reaches public Internet addresses) and no file system, so it takes `s3`, `azure`,
 * `http` and `webdav` over https, R2 buckets bound to it and `portal` hosts (which move nothing);
 * every other host is left to the Node movers, which share the same database and claims.
 */
export interface EdgeReachOptions {
  /**
   * Lets private and loopback addresses through. Only for tests: a local workerd reaches servers
   * on the loopback interface that a deployed Worker never can.
   */
  allowPrivate: boolean;
}

const INTERNET = new Set(['i', 'internet']);

/** The transfer methods an edge can ever send with: destinations with no such host are not even read. */
export const EDGE_MODULES = ['s3', 'http', 'r2', 'portal', 'azure', 'webdav'] as const;

type FetchModule = 's3' | 'http' | 'azure' | 'webdav';
const FETCH_MODULES: readonly string[] = ['s3', 'http', 'azure', 'webdav'] satisfies FetchModule[];

/** Why the edge cannot deliver to `host`, or null when it can. */
export function whyEdgeCannotReach(host: DisseminationHost, options: EdgeReachOptions): string | null {
  const module = host.module ?? 'none';
  // A bound bucket is reached through the binding, and a portal host is not reached at all.
  if (module === 'r2' || module === 'portal') return null;
  if (!FETCH_MODULES.includes(module)) return `the ${module} method needs a Node mover`;
  if (!INTERNET.has((host.network ?? '').trim().toLowerCase())) {
    return `network ${host.network ?? '(none)'} is not the Internet`;
  }
  const endpoint = endpointOf(module as FetchModule, host);
  if (typeof endpoint === 'string') return endpoint;
  // Basic authentication would cross the Internet in clear.
  if ((module === 'http' || module === 'webdav') && endpoint.scheme !== 'https') return `${module}.scheme is not https`;
  if (!options.allowPrivate && isPrivateHost(endpoint.hostname)) {
    return `${endpoint.hostname} is a private or loopback address`;
  }
  return null;
}

export const edgeCanReach = (host: DisseminationHost, options: EdgeReachOptions) =>
  whyEdgeCannotReach(host, options) === null;

/**
 * The scheme and name the method fetches, as s3-target.ts, azure-target.ts, http.ts and webdav.ts
 * build them; a reason when unreadable.
 */
function endpointOf(module: FetchModule, host: DisseminationHost): { scheme: string; hostname: string } | string {
  // Only where it goes is read, never a credential: the secret options can stay sealed.
  const raw = methodOptions(module, host.host, host.data).raw;
  const url = module === 's3' || module === 'azure' ? raw.get('url')?.trim() : undefined;
  if (url) {
    try {
      const parsed = new URL(url);
      return { scheme: parsed.protocol.slice(0, -1), hostname: parsed.hostname.replace(/^\[|\]$/g, '') };
    } catch {
      return `${module}.url ${url} is not a URL`;
    }
  }
  const hostname = splitHostPort(host.host.trim()).hostname;
  // An S3 host without a name is AWS, in its region.
  if (module === 's3' && hostname === '') return { scheme: 'https', hostname: 's3.amazonaws.com' };
  if (hostname === '') return 'the host has no name';
  return { scheme: raw.get('scheme')?.trim().toLowerCase() || (module === 'http' ? 'http' : 'https'), hostname };
}

/**
 * Names and addresses that are not on the public Internet: loopback, private, link-local,
 * carrier-grade NAT, unspecified and unique-local addresses, `localhost` names, and single-label
 * names (resolved by a local search domain, never by public DNS).
 */
export function isPrivateHost(hostname: string): boolean {
  const name = normalised(hostname);
  if (name === '' || name === 'localhost' || name.endsWith('.localhost')) return true;
  const v4 = ipv4(name);
  if (v4) return privateV4(v4);
  if (name.includes(':')) return privateV6(name);
  return !name.includes('.') || name.endsWith('.local') || name.endsWith('.internal');
}

/** As fetch reads the name: `127.1`, `2130706433` and `0x7f.0.0.1` are 127.0.0.1; IPv6 compressed. */
function normalised(hostname: string): string {
  const name = hostname.trim().toLowerCase().replace(/\.$/, '');
  const bracketed = name.includes(':') && !name.startsWith('[') ? `[${name}]` : name;
  try {
    return new URL(`http://${bracketed}/`).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return name;
  }
}

function ipv4(name: string): number[] | null {
  const parts = name.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return null;
  return parts.map(Number);
}

function privateV4([a, b]: number[]): boolean {
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b! >= 64 && b! <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b! >= 16 && b! <= 31) ||
    (a === 192 && b === 168)
  );
}

function privateV6(name: string): boolean {
  const bare = name.replace(/%.*$/, '');
  if (bare === '::' || bare === '::1') return true;
  // An IPv4-mapped address is judged as the IPv4 address it carries.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  if (mapped) return privateV4(ipv4(mapped[1]!) ?? [0]);
  if (/^::ffff:[0-9a-f]{1,4}:[0-9a-f]{1,4}$/.test(bare)) {
    const [hi, lo] = bare
      .slice(7)
      .split(':')
      .map((h) => Number.parseInt(h, 16));
    return privateV4([hi! >> 8, hi! & 255, lo! >> 8, lo! & 255]);
  }
  const first = Number.parseInt(bare.split(':')[0] || '0', 16);
  // fc00::/7 unique local, fe80::/10 link-local.
  return (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80;
}
