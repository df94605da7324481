import { invalid } from '../../core/common/errors.ts';
import { deliverFile, type RemoteFiles } from '../../core/dissemination/deliver.ts';
import { deliveryFor, type HostConnection, type TransferMethod } from '../../core/dissemination/methods.ts';
import { runtimeHashing } from '../runtime-hashing.ts';
import { getFile } from './get-file.ts';
import { fetchFailure, requestBody, sendError, sizedSource } from './sized-source.ts';
import { answerText, type UploadWatch, uploadWatch } from './upload-watch.ts';
import { propfindEntries } from './web-listing.ts';

/**
 * The `webdav` method (RFC 4918), over fetch: the file PUT under a temporary name (the file's
 * name, the attempt's tag and `webdav.suffix`, `.tmp` by default), its size read back with HEAD
 * unless `webdav.ignoreCheck`, then MOVEd onto its final name (`Overwrite: T`) once the database
 * confirmed the attempt still owns the transfer (`deliverFile`); missing directories are made
 * with MKCOL, one level at a time (`webdav.mkdirs`). `webdav.usetmp` false PUTs the final name
 * directly. URLs are `<webdav.scheme>://<host>[:port]<webdav.path>/<dir>/<target>`, https by
 * default; Basic authentication from the host's login and password. Requests the server stops
 * reading, or does not answer, for `ectrans.streamTimeout` are aborted, their connections closed.
 * An Acquisition host's directory is listed with PROPFIND (`Depth: 1`).
 */
export function webdavMethod(dependencies: { fetch?: typeof fetch } = {}): TransferMethod {
  const hashing = runtimeHashing();
  // Called unbound: Workers refuses a fetch invoked as a method of another object.
  const send: typeof fetch = dependencies.fetch ?? ((input, init) => fetch(input, init));
  return {
    async send(host, file, source, callerSignal) {
      callerSignal.throwIfAborted();
      const watch = uploadWatch(callerSignal, host.options);
      try {
        return await deliverFile(
          webdavRemote(host, file.size, send, watch),
          deliveryFor(host, file),
          source,
          watch.signal,
          hashing,
        );
      } catch (error) {
        watch.abort(error);
        throw error;
      } finally {
        watch.clear();
      }
    },
    fetch(host, path, signal) {
      const url = urlOn(host, path);
      return getFile(send, url, basicAuthorization(host), signal, `WebDAV GET ${url.origin}${url.pathname}`);
    },
    // At the URL `fetch` reads the members under, with the trailing slash a collection's URL has.
    async list(host, directory, signal) {
      const url = urlOn(host, directory, true);
      return propfindEntries({ send, url, headers: basicAuthorization(host), directory, signal });
    },
    async close() {},
  };
}

/** The URL of `path` under the host's base URL: the caller has put the host's directory in front if one applies. */
function urlOn(host: HostConnection, path: string, collection = false): URL {
  const segments = path.split('/').filter((s) => s !== '');
  const tail = collection && segments.length > 0 ? '/' : '';
  return new URL(`${webdavBase(host)}/${segments.map(encodeURIComponent).join('/')}${tail}`);
}

const basicAuthorization = (host: HostConnection): Record<string, string> =>
  host.login === '' ? {} : { authorization: `Basic ${base64(`${host.login}:${host.password ?? ''}`)}` };

/** The WebDAV server as files under the host's base URL. */
export function webdavRemote(host: HostConnection, size: number, send: typeof fetch, watch: UploadWatch): RemoteFiles {
  const base = webdavBase(host);
  const urlOf = (path: string, collection = false) => {
    const segments = path.split('/').filter((s) => s !== '');
    return new URL(`${base}/${segments.map(encodeURIComponent).join('/')}${collection ? '/' : ''}`);
  };
  const authorization = basicAuthorization(host);

  async function request(method: string, url: URL, headers: Record<string, string> = {}, body?: RequestInit['body']) {
    const init = {
      method,
      headers: { ...authorization, ...headers },
      body,
      signal: watch.signal,
      duplex: 'half',
      redirect: 'manual',
    } as RequestInit;
    const response = await send(url, init);
    watch.moved();
    return response;
  }
  const label = (method: string, url: URL) => `WebDAV ${method} ${url.origin}${url.pathname}`;
  async function failure(method: string, url: URL, response: Response) {
    const text = await answerText(response, watch.moved).catch(() => '');
    const excerpt = text
      .replace(/<[^>]*>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, 200);
    return new Error(`${label(method, url)} failed: ${response.status} ${response.statusText} ${excerpt}`.trim());
  }
  async function must(method: string, url: URL, ok: (status: number) => boolean, headers?: Record<string, string>) {
    let response: Response;
    try {
      response = await request(method, url, headers);
    } catch (error) {
      if (watch.signal.aborted) throw watch.signal.reason ?? error;
      throw new Error(`${label(method, url)} failed: ${fetchFailure(error)}`);
    }
    if (!ok(response.status)) throw await failure(method, url, response);
    await response.body?.cancel();
    return response;
  }

  return {
    async makeDirectories(directory) {
      const segments = directory.split('/').filter((s) => s !== '');
      for (let depth = 1; depth <= segments.length; depth++) {
        // 405: the collection is there already.
        await must('MKCOL', urlOf(segments.slice(0, depth).join('/'), true), (s) => s === 201 || s === 405);
      }
    },
    async write(path, source, signal) {
      const url = urlOf(path);
      const sized = sizedSource(source, size);
      let response: Response;
      try {
        const body = requestBody(sized.chunks, size, { signal, moved: watch.moved });
        const headers = { 'content-length': String(size), 'content-type': 'application/octet-stream' };
        response = await request('PUT', url, headers, body);
      } catch (error) {
        throw sendError(sized, signal, error, () => new Error(`${label('PUT', url)} failed: ${fetchFailure(error)}`));
      }
      if (!response.ok) throw await failure('PUT', url, response);
      await response.body?.cancel();
      return sized.bytes();
    },
    async size(path) {
      const response = await must('HEAD', urlOf(path), (s) => s === 404 || (s >= 200 && s < 300));
      const length = response.headers.get('content-length');
      return response.status === 404 || length === null ? null : Number(length);
    },
    async rename(from, to) {
      await must('MOVE', urlOf(from), (s) => s === 201 || s === 204, { destination: urlOf(to).href, overwrite: 'T' });
    },
    async remove(path) {
      await must('DELETE', urlOf(path), (s) => s === 404 || (s >= 200 && s < 300));
    },
  };
}

/** `<webdav.scheme>://<host>[:port]<webdav.path>`, without a trailing slash. */
export function webdavBase(host: HostConnection): string {
  const scheme = host.options.raw.get('scheme')?.trim().toLowerCase() || 'https';
  if (scheme !== 'http' && scheme !== 'https') throw invalid(`webdav.scheme must be http or https, not ${scheme}`);
  if (host.hostname.trim() === '') throw invalid('The WebDAV host has no name');
  const name = host.hostname.includes(':') && !host.hostname.startsWith('[') ? `[${host.hostname}]` : host.hostname;
  const port = host.options.port === null ? '' : `:${host.options.port}`;
  const path = (host.options.raw.get('path') ?? '')
    .split('/')
    .filter((s) => s !== '')
    .map(encodeURIComponent)
    .join('/');
  return `${scheme}://${name}${port}${path === '' ? '' : `/${path}`}`;
}

/** Base64 of the UTF-8 bytes (btoa alone takes Latin-1 only). */
const base64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));
