import type { ListedEntry } from '../../core/acquisition/selection.ts';
import { fetchFailure } from './sized-source.ts';

/**
 * Directory listings over HTTP, for Acquisition hosts: a WebDAV PROPFIND (`webdav`), or an index page
 * as web servers generate them (`http`: nginx `autoindex`, Apache `mod_autoindex`) with a HEAD per file.
 * Each request goes to the URL the method's `fetch` would read, so that what is listed can be read.
 */

/** HEAD requests in flight at once while an index page's files are sized. */
export const HEADS_IN_FLIGHT = 8;

export interface ListingRequest {
  send: typeof fetch;
  /** The directory's URL, ending with `/`. */
  url: URL;
  headers: Record<string, string>;
  /** The directory as the caller named it, for messages. */
  directory: string;
  signal: AbortSignal;
}

const PROPFIND_BODY =
  '<?xml version="1.0" encoding="utf-8"?>\n' +
  '<D:propfind xmlns:D="DAV:"><D:prop><D:resourcetype/><D:getcontentlength/><D:getlastmodified/></D:prop></D:propfind>';

/** The collection's members (`Depth: 1`), the collection itself left out. */
export async function propfindEntries(request: ListingRequest): Promise<ListedEntry[]> {
  const headers = { ...request.headers, depth: '1', 'content-type': 'application/xml; charset=utf-8' };
  const xml = await answerOf(request, 'WebDAV PROPFIND', { method: 'PROPFIND', headers, body: PROPFIND_BODY }, 207);
  const self = segmentsOf(request.url.pathname);
  const entries: ListedEntry[] = [];
  for (const response of davResponses(xml, request.url)) {
    if (response.segments === null) continue;
    if (sameSegments(response.segments, self)) {
      if (!response.collection) throw new Error(`Cannot list ${request.directory} (not a directory)`);
      continue;
    }
    const name = response.segments.at(-1);
    if (name !== undefined && fetchable(name)) entries.push(entryOf(name, response));
  }
  return entries;
}

/**
 * The files and directories an index page links to directly, each file then asked for its size and time
 * with HEAD (at most HEADS_IN_FLIGHT at once); a file gone by then is left out.
 */
export async function indexEntries(request: ListingRequest): Promise<ListedEntry[]> {
  const headers = { ...request.headers, accept: 'text/html' };
  const html = await answerOf(request, 'HTTP GET', { method: 'GET', headers }, 200);
  const children = childLinks(html, request.url);
  // A failed HEAD fails the listing: the ones still in flight are not waited for.
  const stop = new AbortController();
  const signal = AbortSignal.any([request.signal, stop.signal]);
  try {
    const entries = await mapBounded(children, HEADS_IN_FLIGHT, (child) =>
      child.directory ? Promise.resolve(entryOf(child.name, null)) : headEntry({ ...request, signal }, child.name),
    );
    return entries.filter((entry): entry is ListedEntry => entry !== null);
  } finally {
    stop.abort();
  }
}

/** The answer's text, when its status is `expected`; a 404 is a missing directory, named. */
async function answerOf(request: ListingRequest, label: string, init: RequestInit, expected: number) {
  const { url, directory, signal } = request;
  const what = `${label} ${url.origin}${url.pathname}`;
  signal.throwIfAborted();
  const response = await attempt(request, what, () => request.send(url, { ...init, signal, redirect: 'manual' }));
  if (response.status === expected) return attempt(request, what, () => response.text());
  await attempt(request, what, async () => response.body?.cancel());
  if (response.status === 404 || response.status === 410) throw new Error(`No such directory ${directory}`);
  throw new Error(`Cannot list ${directory} (${what} failed: ${statusOf(response)})`);
}

/** What a request of the listing answers; an abort rejects with its reason, any other failure says which request. */
async function attempt<T>(request: ListingRequest, what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (request.signal.aborted) throw request.signal.reason;
    throw new Error(`Cannot list ${request.directory} (${what} failed: ${fetchFailure(error)})`);
  }
}

/** `404 Not Found`, and where a redirect pointed (never followed: the method's `fetch` would not either). */
function statusOf(response: Response) {
  const location = response.headers.get('location');
  return `${response.status} ${response.statusText}${location ? ` (to ${location})` : ''}`.trim();
}

/**
 * A file of an index page with its size and time. A link without a slash that redirects to itself with
 * one is a directory after all; one that is gone (404, 410) is no entry; any other refusal leaves the
 * size and time unknown, so that the run shows the file as not taken rather than failing the directory.
 */
async function headEntry(request: ListingRequest, name: string): Promise<ListedEntry | null> {
  const url = new URL(encodeURIComponent(name), request.url);
  const headers = { ...request.headers, 'accept-encoding': 'identity' };
  const init: RequestInit = { method: 'HEAD', headers, signal: request.signal, redirect: 'manual' };
  const what = `HTTP HEAD ${url.origin}${url.pathname}`;
  const response = await attempt(request, what, () => request.send(url, init));
  await attempt(request, what, async () => response.body?.cancel());
  if (response.status === 404 || response.status === 410) return null;
  if (redirectsToCollection(response, url)) return entryOf(name, null);
  if (!response.ok) return { name, type: 'file', size: null, time: null };
  return entryOf(name, {
    collection: false,
    size: response.headers.get('content-length'),
    time: response.headers.get('last-modified'),
  });
}

function redirectsToCollection(response: Response, url: URL) {
  const location = response.status >= 300 && response.status < 400 ? response.headers.get('location') : null;
  if (location === null) return false;
  try {
    return new URL(location, url).href === `${url.href}/`;
  } catch {
    return false;
  }
}

interface Properties {
  collection: boolean;
  size: string | null;
  time: string | null;
}

/** The entry of a name with the properties the server gave (a directory when none). */
function entryOf(name: string, properties: Properties | null): ListedEntry {
  if (properties === null || properties.collection) {
    return { name, type: 'directory', size: null, time: dateOf(properties?.time ?? null) };
  }
  const size = properties.size?.trim() ?? '';
  return { name, type: 'file', size: /^\d+$/.test(size) ? Number(size) : null, time: dateOf(properties.time) };
}

function dateOf(text: string | null): Date | null {
  const time = text === null ? Number.NaN : Date.parse(text);
  return Number.isNaN(time) ? null : new Date(time);
}

interface DavResponse extends Properties {
  /** The member's path, decoded segment by segment; null when it does not decode. */
  segments: string[] | null;
}

/**
 * The `response` elements of a multistatus answer, with the properties of their successful `propstat`s.
 * Elements are matched by local name whatever their prefix (`D:`, `lp1:`, none), as servers differ.
 */
function davResponses(xml: string, base: URL): DavResponse[] {
  return elements(xml, 'response').map((response) => {
    const href = textOf(response, 'href');
    const found = elements(response, 'propstat')
      .filter((propstat) => /^\s*HTTP\/[\d.]+\s+2\d\d\b/i.test(textOf(propstat, 'status') ?? ''))
      .join('\n');
    const type = elements(found, 'resourcetype').join('');
    return {
      segments: href === null ? null : pathSegments(href, base),
      collection: new RegExp(`<${PREFIX}collection\\b`).test(type),
      size: textOf(found, 'getcontentlength'),
      time: textOf(found, 'getlastmodified'),
    };
  });
}

const PREFIX = '(?:[A-Za-z_][\\w.-]*:)?';

/** The content of each `<name>…</name>` element, any prefix, in order (none nested in one of its kind). */
function elements(xml: string, name: string): string[] {
  const pattern = new RegExp(`<${PREFIX}${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${PREFIX}${name}\\s*>`, 'g');
  return [...xml.matchAll(pattern)].map((match) => match[1]!);
}

/** The first such element's text, entities decoded; null when there is none. */
function textOf(xml: string, name: string): string | null {
  const [content] = elements(xml, name);
  return content === undefined ? null : decodeEntities(content.replace(/<!\[CDATA\[([\s\S]*?)\]\]>/g, '$1')).trim();
}

interface ChildLink {
  name: string;
  directory: boolean;
}

/**
 * The entries an index page links to directly under `directory` (its URL, ending with `/`): `href`s that
 * resolve to one more path segment on the same server (`../`, sort links with a query, fragments, other
 * hosts and parents are not entries), a trailing `/` marking a directory; each name once.
 */
function childLinks(html: string, directory: URL): ChildLink[] {
  const parent = segmentsOf(directory.pathname);
  const children = new Map<string, ChildLink>();
  if (parent === null) return [];
  for (const href of anchorHrefs(html)) {
    if (href === '' || /[?#]/.test(href)) continue;
    const url = resolved(href, directory);
    if (url === null || url.origin !== directory.origin) continue;
    const segments = segmentsOf(url.pathname);
    if (segments === null || segments.length !== parent.length + 1) continue;
    if (!sameSegments(segments.slice(0, -1), parent)) continue;
    const name = segments.at(-1)!;
    const link = { name, directory: url.pathname.endsWith('/') };
    if (fetchable(name) && !children.has(name)) children.set(name, link);
  }
  return [...children.values()];
}

/**
 * The `href` of each `<a>` element, entities decoded, comments, scripts and styles skipped. Attributes are
 * read one after the other, so that an `href=` inside another attribute's quoted value is not taken.
 */
function anchorHrefs(html: string): string[] {
  const text = html.replace(/<!--[\s\S]*?-->/g, '').replace(/<(script|style)\b[\s\S]*?<\/\1\s*>/gi, '');
  const hrefs: string[] = [];
  for (const tag of text.matchAll(/<a\s((?:[^>"']|"[^"]*"|'[^']*')*)>/gi)) {
    const href = attributeOf(tag[1]!, 'href');
    if (href !== null) hrefs.push(decodeEntities(href).trim());
  }
  return hrefs;
}

function attributeOf(attributes: string, wanted: string): string | null {
  const pattern = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?/g;
  for (const [, name, double, single, bare] of attributes.matchAll(pattern)) {
    if (name!.toLowerCase() === wanted) return double ?? single ?? bare ?? '';
  }
  return null;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** The entities links and XML carry (named ones of ENTITIES, numeric ones); any other is left as written. */
function decodeEntities(text: string): string {
  return text.replace(/&(?:#(\d+)|#x([0-9a-f]+)|([a-z]+));/gi, (entity, dec?: string, hex?: string, named?: string) => {
    if (named !== undefined) return ENTITIES[named.toLowerCase()] ?? entity;
    const code = dec !== undefined ? Number(dec) : Number.parseInt(hex!, 16);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : entity;
  });
}

function resolved(href: string, base: URL): URL | null {
  try {
    return new URL(href, base);
  } catch {
    return null;
  }
}

/** The decoded path segments of a URL or path (resolved against `base`); null when one does not decode. */
function pathSegments(href: string, base: URL): string[] | null {
  const url = resolved(href, base);
  return url === null ? null : segmentsOf(url.pathname);
}

function segmentsOf(pathname: string): string[] | null {
  try {
    return pathname
      .split('/')
      .filter((segment) => segment !== '')
      .map(decodeURIComponent);
  } catch {
    return null;
  }
}

const sameSegments = (a: string[] | null, b: string[] | null) =>
  a !== null && b !== null && a.length === b.length && a.every((segment, i) => segment === b[i]);

/**
 * A name the method's `fetch` can read back as one path segment: not `.` or `..`, and no `/` (an encoded
 * one would come back as two segments).
 */
const fetchable = (name: string) => name !== '.' && name !== '..' && !name.includes('/');

/** `fn` over each item, at most `limit` at once, the results in the items' order; the first failure ends it. */
async function mapBounded<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        results[index] = await fn(items[index]!);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
