import { invalid } from '../common/errors.ts';
import type { SourceReader } from '../dissemination/send.ts';
import type { SourceProber } from './ports.ts';
import { isR2Source } from './r2-sources.ts';

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** A source on another host, reached over http(s); else an R2 object (r2-sources.ts), a local path or file URL. */
export const isRemoteSource = (source: string) => /^https?:\/\//i.test(source);

/** A source as it may appear in messages (and so in logs): any user:password in a URL is masked. */
export const shownSource = (source: string) => source.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@?#]*@/i, '$1***@');
const MAX_REDIRECTS = 5;

/** `host` allows that host on any port; `host:port` only that port. */
export function hostAllowed(allowList: readonly string[], url: URL): boolean {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const host = url.hostname.toLowerCase();
  const withPort = url.port ? `${host}:${url.port}` : host;
  return allowList.some((entry) => {
    const e = entry.trim().toLowerCase();
    return e !== '' && (e === host || e === withPort);
  });
}

/**
 * Probes an http(s) source: only allow-listed hosts, redirects followed only while they stay
 * on the list, a timeout on every hop; the size from HEAD, else from a one-byte ranged GET.
 */
export function httpSourceProber(
  allowList: readonly string[],
  timeoutMs: number,
  fetchImpl: typeof fetch = fetch,
): SourceProber {
  return {
    async probe(raw) {
      const source = shownSource(raw);
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        throw invalid(`Source ${source} is not a valid URL`);
      }
      for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
        if (!hostAllowed(allowList, url))
          throw invalid(`Source ${source} not allowed: ${url.host} is not an allowed source host`);
        const head = await request(fetchImpl, url, 'HEAD', timeoutMs, source);
        if (REDIRECTS.has(head.status)) {
          const location = head.headers.get('location');
          if (!location) throw invalid(`Source ${source} not reachable: redirect without a location`);
          url = new URL(location, url);
          continue;
        }
        const length = head.ok ? lengthOf(head.headers.get('content-length')) : null;
        if (length !== null) return { size: length };
        if (!head.ok && head.status !== 405 && head.status !== 501)
          throw invalid(`Source ${source} not reachable: HTTP ${head.status}`);
        const ranged = await request(fetchImpl, url, 'GET', timeoutMs, source, { range: 'bytes=0-0' });
        await ranged.body?.cancel();
        const total = /\/(\d+)\s*$/.exec(ranged.headers.get('content-range') ?? '')?.[1];
        if (ranged.status === 206 && total !== undefined) return { size: Number(total) };
        const whole = ranged.ok ? lengthOf(ranged.headers.get('content-length')) : null;
        if (whole !== null && ranged.status === 200) return { size: whole };
        throw invalid(`Source ${source} not reachable: ${ranged.ok ? 'size unknown' : `HTTP ${ranged.status}`}`);
      }
      throw invalid(`Source ${source} not reachable: too many redirects`);
    },
  };
}

const lengthOf = (value: string | null) => (value !== null && /^\d+$/.test(value) ? Number(value) : null);

async function request(
  fetchImpl: typeof fetch,
  url: URL,
  method: string,
  timeoutMs: number,
  source: string,
  headers: Record<string, string> = {},
) {
  try {
    return await fetchImpl(url, { method, headers, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    const reason =
      e instanceof Error && e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : 'connection failed';
    throw invalid(`Source ${source} not reachable: ${reason}`);
  }
}

/** Sources of a Worker, which has no file system: http(s) URLs and objects of its R2 buckets. */
export function httpOrR2Prober(forms: { http: SourceProber; r2: SourceProber }): SourceProber {
  return {
    probe(source) {
      if (isRemoteSource(source)) return forms.http.probe(source);
      if (isR2Source(source)) return forms.r2.probe(source);
      throw invalid(`Source ${shownSource(source)} not allowed: only http(s) and r2 sources are supported here`);
    },
  };
}

/**
 * Reads an http(s) source when it is sent, on any runtime with fetch: an allowed host only, no
 * redirect followed (where it leads was not what was checked), and a Content-Length, so that the
 * size can be compared with the registered one before a byte is sent. The body is asked for as
 * is (`identity`): a runtime that decodes a compressed answer would not give the bytes counted.
 * A range is asked for with a Range header; its answer must say the whole source's size
 * (Content-Range), and a server that sends the whole source instead has it cut to the range.
 */
export function httpSourceReader(allowList: readonly string[], fetchImpl: typeof fetch = fetch): SourceReader {
  return {
    async open(raw, signal, range) {
      const shown = shownSource(raw);
      const url = new URL(raw);
      if (!hostAllowed(allowList, url)) throw invalid(`Source ${shown} not allowed: ${url.host} is not allowed`);
      const headers: Record<string, string> = { 'accept-encoding': 'identity' };
      if (range) headers.range = `bytes=${range.start}-${range.end}`;
      const response = await fetchImpl(url, { signal, redirect: 'manual', headers });
      const length = lengthOf(response.headers.get('content-length'));
      const failed = async (why: string) => {
        await response.body?.cancel();
        return invalid(`Source ${shown} could not be read: ${why}`);
      };
      if (range && response.status === 206 && response.body) {
        const total = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(response.headers.get('content-range')?.trim() ?? '');
        if (!total || Number(total[1]) !== range.start) throw await failed('a range other than the one asked for');
        return { size: Number(total[3]), stream: response.body as unknown as AsyncIterable<Uint8Array> };
      }
      if (range && response.status === 416) {
        const total = /^bytes \*\/(\d+)$/.exec(response.headers.get('content-range')?.trim() ?? '');
        if (total) {
          await response.body?.cancel();
          return { size: Number(total[1]), stream: emptyStream() };
        }
      }
      if (response.status !== 200 || !response.body || length === null) {
        throw await failed(response.status === 200 ? 'no Content-Length' : `HTTP ${response.status}`);
      }
      const stream = response.body as unknown as AsyncIterable<Uint8Array>;
      return { size: length, stream: range ? sliceOf(stream, range) : stream };
    },
  };
}

async function* emptyStream(): AsyncIterable<Uint8Array> {}

/** Bytes `start` to `end` of a stream, which is left as soon as they are read. */
export async function* sliceOf(stream: AsyncIterable<Uint8Array>, range: { start: number; end: number }) {
  let at = 0;
  for await (const chunk of stream) {
    const from = Math.max(0, range.start - at);
    const to = Math.min(chunk.byteLength, range.end + 1 - at);
    at += chunk.byteLength;
    if (to > from) yield chunk.subarray(from, to);
    if (at > range.end) return;
  }
}

/** Sources when they are sent, on a Worker (no file system): http(s) URLs and objects of its R2 buckets. */
export function httpOrR2Reader(forms: { http: SourceReader; r2: SourceReader }): SourceReader {
  return {
    open(source, signal, range) {
      if (isRemoteSource(source)) return forms.http.open(source, signal, range);
      if (isR2Source(source)) return forms.r2.open(source, signal, range);
      throw invalid(`Source ${shownSource(source)} not allowed: only http(s) and r2 sources are read here`);
    },
  };
}
