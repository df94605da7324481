import { invalid } from '../../core/common/errors.ts';
import type { Delivered } from '../../core/dissemination/deliver.ts';
import { joinRemote } from '../../core/dissemination/deliver.ts';
import { readFlag } from '../../core/dissemination/method-options.ts';
import type { HostConnection, OutgoingFile, TransferMethod } from '../../core/dissemination/methods.ts';
import { getFile } from './get-file.ts';
import { fetchFailure, requestBody, sendError, sizedSource } from './sized-source.ts';
import { answerText, type UploadWatch, uploadWatch } from './upload-watch.ts';
import { indexEntries } from './web-listing.ts';

/**
 * The `http` method: the file as the body of one PUT (or POST with `http.usePost`) to
 * `<http.scheme>://<host>[:port]/<directory>/<target>`, over fetch so it runs on Node and
 * Workers. The server decides what an upload means; a 2xx answer is success. There is no
 * temporary name: a body that did not arrive whole (the source changed size, the send was
 * aborted) is never completed, so a server that stores only complete bodies stores nothing.
 * An upload the server stops reading, or does not answer, for `ectrans.streamTimeout` is aborted,
 * its connection closed (see uploadWatch).
 *
 * Authentication: Basic from the host's login and password when a login is set, and/or
 * `http.authheader`, one header line `Name: value` sent as is (e.g. `Authorization: Bearer …`
 * or `X-Api-Key: …`); it replaces a Basic Authorization header when it is one.
 *
 * An Acquisition host's directory is listed from its index page (nginx `autoindex`, Apache
 * `mod_autoindex`): the entries it links to, each file's size and time from a HEAD request.
 */
export function httpMethod(dependencies: { fetch?: typeof fetch } = {}): TransferMethod {
  // Called unbound: Workers refuses a fetch invoked as a method of another object.
  const send: typeof fetch = dependencies.fetch ?? ((input, init) => fetch(input, init));
  return {
    async send(host, file, source, callerSignal) {
      callerSignal.throwIfAborted();
      const watch = uploadWatch(callerSignal, host.options);
      try {
        return await put(host, file, source, watch, send);
      } catch (error) {
        // A request still under way ends here, its connection dropped, before the send does.
        watch.abort(error);
        throw error;
      } finally {
        watch.clear();
      }
    },
    async fetch(host, path, signal) {
      // The same URL and credentials a send to `path` would use, asked for as is (`identity`).
      const url = httpUrl({ ...host, directory: '' }, { target: path, size: 0 });
      const { 'content-length': _, 'content-type': __, ...headers } = httpHeaders(host, { target: path, size: 0 });
      return getFile(send, url, headers, signal, `HTTP GET ${url.origin}${url.pathname}`);
    },
    async list(host, directory, signal) {
      const url = httpUrl({ ...host, directory: '' }, { target: directory, size: 0 });
      // The index page of a directory is at its URL with a trailing slash (without, servers redirect).
      if (!url.pathname.endsWith('/')) url.pathname += '/';
      const { 'content-length': _, 'content-type': __, ...headers } = httpHeaders(host, { target: directory, size: 0 });
      return indexEntries({ send, url, headers, directory, signal });
    },
    async close() {},
  };
}

async function put(
  host: HostConnection,
  file: OutgoingFile,
  source: AsyncIterable<Uint8Array>,
  watch: UploadWatch,
  send: typeof fetch,
): Promise<Delivered> {
  const url = httpUrl(host, file);
  const method = readFlag(host.options.raw.get('usePost'), false) ? 'POST' : 'PUT';
  const headers = httpHeaders(host, file);
  const sized = sizedSource(source, file.size, file.md5);
  const label = `HTTP ${method} ${url.origin}${url.pathname}`;
  let response: Response;
  const { signal, moved } = watch;
  try {
    const body = requestBody(sized.chunks, file.size, watch);
    // Node's fetch needs `duplex: 'half'` for a streamed body; Workers ignores it. A streamed
    // body cannot be sent again, so a redirect is a failure that says where it pointed.
    const init = { method, headers, body, signal, duplex: 'half', redirect: 'manual' } as RequestInit;
    response = await send(url, init);
  } catch (error) {
    throw sendError(sized, signal, error, () => new Error(`${label} failed: ${fetchFailure(error)}`));
  }
  moved();
  if (!response.ok) {
    const text = await answerText(response, moved).catch(() => '');
    const excerpt = text.replace(/\s+/g, ' ').trim().slice(0, 200);
    const location = response.headers.get('location');
    const to = location ? ` (to ${location})` : '';
    throw new Error(`${label} failed: ${response.status} ${response.statusText}${to} ${excerpt}`.trim());
  }
  await response.body?.cancel();
  if (sized.bytes() !== file.size) throw sized.failure() ?? invalid('Source changed size');
  return { sent: sized.bytes(), md5: sized.md5() };
}

export function httpUrl(host: HostConnection, file: OutgoingFile): URL {
  const scheme = host.options.raw.get('scheme')?.trim().toLowerCase() || 'http';
  if (scheme !== 'http' && scheme !== 'https') throw invalid(`http.scheme must be http or https, not ${scheme}`);
  const name = host.hostname.includes(':') && !host.hostname.startsWith('[') ? `[${host.hostname}]` : host.hostname;
  const port = host.options.port === null ? '' : `:${host.options.port}`;
  const path = joinRemote(host.directory, file.target)
    .split('/')
    .filter((segment) => segment !== '')
    .map(encodeURIComponent)
    .join('/');
  return new URL(`${scheme}://${name}${port}/${path}`);
}

function httpHeaders(host: HostConnection, file: OutgoingFile): Record<string, string> {
  const headers: Record<string, string> = {
    'content-length': String(file.size),
    'content-type': 'application/octet-stream',
  };
  if (host.login !== '') headers.authorization = `Basic ${base64(`${host.login}:${host.password ?? ''}`)}`;
  const line = host.options.raw.get('authheader')?.trim();
  if (line) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim() : '';
    if (!/^[!#$%&'*+.^`|~\w-]+$/.test(name)) throw invalid('http.authheader must read `Name: value`');
    headers[name.toLowerCase()] = line.slice(colon + 1).trim();
  }
  return headers;
}

/** Base64 of the UTF-8 bytes (btoa alone takes Latin-1 only). */
const base64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));
