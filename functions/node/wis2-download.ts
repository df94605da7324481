import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { DownloadRules } from '../../core/acquisition/wis2-intake.ts';

const MOST_REDIRECTS = 3;

/** Loopback, private, link-local, shared and unspecified ranges: reached only when the link's host is listed. */
const PRIVATE = new net.BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const) {
  PRIVATE.addSubnet(address, prefix, 'ipv4');
}
for (const [address, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
] as const) {
  PRIVATE.addSubnet(address, prefix, 'ipv6');
}

const isPrivate = (address: string, family: number) => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return PRIVATE.check(mapped[1]!, 'ipv4');
  return PRIVATE.check(address, family === 6 ? 'ipv6' : 'ipv4');
};

const listed = (hostname: string, hosts: string[]) =>
  hosts.some((h) => h === hostname || (h.startsWith('*.') && hostname.endsWith(h.slice(1))));

/**
 * Downloads a WIS2 link: http or https, to a host the rules allow, following a few redirects under the same
 * rules. The addresses are checked when the connection is made (a name that resolves to a private address
 * is refused unless listed, whatever it resolved to before), and the body is cut at `maxBytes`.
 */
export async function downloadLink(href: string, rules: DownloadRules, signal: AbortSignal): Promise<Uint8Array> {
  let url = new URL(href);
  for (let hop = 0; hop <= MOST_REDIRECTS; hop++) {
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new Error(`${url.protocol} links are not downloaded`);
    const hostname = url.hostname.replace(/^\[|\]$/g, '');
    if (rules.hosts.length > 0 && !listed(hostname, rules.hosts)) {
      throw new Error(`${hostname} is not among the hosts downloads may go to (acquisition.downloadHosts)`);
    }
    const answer = await request(url, listed(hostname, rules.hosts), signal);
    const location = answer.headers.location;
    if (answer.statusCode && answer.statusCode >= 300 && answer.statusCode < 400 && location) {
      answer.resume();
      url = new URL(location, url);
      continue;
    }
    if (answer.statusCode !== 200) {
      answer.resume();
      throw new Error(`${url.host} answered ${answer.statusCode} for ${url.pathname}`);
    }
    return readBody(answer, rules.maxBytes, url);
  }
  throw new Error(`more than ${MOST_REDIRECTS} redirects from ${new URL(href).host}`);
}

function request(url: URL, privateAllowed: boolean, signal: AbortSignal) {
  const lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const found = addresses as dns.LookupAddress[];
      const refused = found.find((a) => !privateAllowed && isPrivate(a.address, a.family));
      if (refused) return callback(new Error(`${hostname} resolves to a private address (${refused.address})`), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, found);
      callback(null, found[0]!.address, found[0]!.family);
    });
  };
  const literal = net.isIP(url.hostname.replace(/^\[|\]$/g, ''));
  if (literal && !privateAllowed && isPrivate(url.hostname.replace(/^\[|\]$/g, ''), literal)) {
    return Promise.reject(new Error(`${url.hostname} is a private address`));
  }
  const get = url.protocol === 'https:' ? https.get : http.get;
  return new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = get(url, { lookup, signal, headers: { 'user-agent': 'ecpds-edge' } }, resolve);
    req.on('error', reject);
  });
}

async function readBody(answer: http.IncomingMessage, maxBytes: number, url: URL) {
  const declared = Number(answer.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    answer.destroy();
    throw new Error(`${url.pathname} is ${declared} bytes, over acquisition.maximumSize (${maxBytes})`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of answer as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      answer.destroy();
      throw new Error(`${url.pathname} is over acquisition.maximumSize (${maxBytes} bytes)`);
    }
    chunks.push(chunk);
  }
  return new Uint8Array(Buffer.concat(chunks));
}
