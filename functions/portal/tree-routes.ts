import type { Context } from 'hono';
import { constantTimeEqualText } from '../../core/common/crypto.ts';
import { listDestinations, listFolder, withFolderFiles } from '../../core/portal/folders.ts';
import { mayList } from '../../core/portal/listing-rule.ts';
import { allowed } from '../../core/portal/options.ts';
import type { PortalOperation } from '../../core/portal/ports.ts';
import {
  cursorAfter,
  encodePath,
  isSafeSegment,
  listingRows,
  parseTreePath,
  readPage,
  type TreeTarget,
  treeTarget,
} from '../../core/portal/tree.ts';
import { deletePortalFile, treeViewer } from '../../core/portal/uploads.ts';
import type { Ports } from '../../core/ports.ts';
import { VERSION_PARAMETER } from '../../core/wis2/message.ts';
import { plain } from '../http/errors.ts';
import { downloadAnswer, downloadRequest } from './download.ts';
import { notFoundAnswer, PortalAnswer, permissionDenied } from './errors.ts';
import { listingResponse, listingType } from './listing.tsx';
import { formBoundary, formParts } from './multipart.ts';
import type { PortalOptions } from './options.ts';
import { receiveUpload, type UploadDeps, uploadsUnavailable } from './upload.ts';
import { readReceipts, receiptOf, UPLOADED_PARAMETER, uploadedFiles } from './upload-receipt.ts';
import type { Visitor } from './who.ts';

/** One request of the tree below `visitor.base`; `rest` is the path after it, still percent-encoded. */
export async function serveTree(c: Context, options: PortalOptions, ports: Ports, visitor: Visitor, rest: string) {
  const path = parseTreePath(rest);
  if (path === null) return plain(400, 'Invalid path');
  const target = treeTarget(path);
  if (target.kind !== 'root' && !visitor.identity.destinations.includes(target.destination)) {
    // The same answer whether the destination exists or not.
    return notFoundAnswer();
  }
  const deps = {
    ports,
    serverName: options.serverName,
    address: options.clientAddress(c),
    requestId: (c.get('requestId') as string | undefined) ?? 'unknown',
  };
  const method = c.req.method;
  // A browser session's changes carry its token (a form field, or X-CSRF-Token for scripts): its
  // cookie alone, which a page of another site can make the browser send, changes nothing.
  if ((method === 'PUT' || method === 'DELETE') && visitor.session !== null && !headerToken(c, visitor)) {
    return csrfRefused();
  }
  switch (target.kind) {
    case 'root':
      if (method !== 'GET' && method !== 'HEAD') return notAllowed('GET, HEAD');
      return listDirectory(c, ports, visitor, target);
    case 'directory':
      if (!target.slash) return moved(`${visitor.base}${encodePath(path.segments)}/`, c);
      if (method === 'GET' || method === 'HEAD') return listDirectory(c, ports, visitor, target);
      if (method === 'POST') return formUpload(c, { ...deps, store: options.uploads }, visitor, target);
      return notAllowed('GET, HEAD, POST');
    case 'file': {
      const ruled = `${target.destination}/${target.path}`;
      if (method === 'PUT') {
        requirePermission(visitor, 'put', ruled);
        const length = c.req.header('content-length');
        const uploaded = await receiveUpload(
          { ...deps, store: options.uploads },
          visitor,
          target,
          bodyOf(c),
          length === undefined || !/^\d+$/.test(length) ? null : Number(length),
        );
        const location = `${visitor.base}${encodePath([target.destination, ...target.path.split('/')])}`;
        return Response.json(uploaded, { status: uploaded.replaced ? 200 : 201, headers: { location } });
      }
      if (method !== 'GET' && method !== 'HEAD' && method !== 'DELETE') return notAllowed('GET, HEAD, PUT, DELETE');
      const version = c.req.query(VERSION_PARAMETER);
      if (version !== undefined) {
        if (method !== 'GET' && method !== 'HEAD') return notAllowed('GET, HEAD');
        const stored = await ports.repos.portal.version(
          target.destination,
          target.path,
          version,
          ports.clock(),
          treeViewer(visitor.identity),
        );
        if (stored === null) return notFoundAnswer();
        requirePermission(visitor, 'get', ruled);
        const request = downloadRequest((name) => c.req.header(name), method, c.req.query('download') === '1');
        const download = { ...deps, sources: options.sources, abandonAfterMs: options.abandonAfterMs ?? null };
        return downloadAnswer(
          { ...download, recheckMs: options.recheckMs },
          visitor,
          request,
          target.destination,
          stored,
        );
      }
      const viewer = treeViewer(visitor.identity);
      const file = await ports.repos.portal.file(target.destination, target.path, ports.clock(), viewer);
      if (file === null) {
        const below = await ports.repos.portal.list(
          target.destination,
          `${target.path}/`,
          ports.clock(),
          { after: null, limit: 1 },
          viewer,
        );
        if (below.length > 0 && method !== 'DELETE') return moved(`${visitor.base}${encodePath(path.segments)}/`, c);
        return notFoundAnswer();
      }
      if (method === 'DELETE') {
        requirePermission(visitor, 'delete', ruled);
        await deletePortalFile(ports, visitor.identity, file, deps.requestId);
        return new Response(null, { status: 204 });
      }
      requirePermission(visitor, 'get', ruled);
      const request = downloadRequest(
        (name) => c.req.header(name),
        method as 'GET' | 'HEAD',
        c.req.query('download') === '1',
      );
      const download = {
        ...deps,
        sources: options.sources,
        abandonAfterMs: options.abandonAfterMs ?? null,
        recheckMs: options.recheckMs,
      };
      return downloadAnswer(download, visitor, request, target.destination, file);
    }
  }
}

/** A page of the destinations' root or of a directory of one, in the type the client asks for. */
async function listDirectory(
  c: Context,
  ports: Ports,
  visitor: Visitor,
  target: Exclude<TreeTarget, { kind: 'file' }>,
) {
  const page = readPage({ limit: c.req.query('limit'), after: c.req.query('after') });
  if (typeof page === 'string') return plain(400, page);
  const who = visitor.identity;
  let segments: string[] = [];
  let entries: Awaited<ReturnType<Ports['repos']['portal']['list']>>;
  // One entry more than the page, to know whether another page follows.
  const asked = { after: page.after, limit: page.limit + 1 };
  const listed =
    target.kind === 'root'
      ? { destination: null, directory: '' }
      : {
          destination: target.destination,
          directory: target.prefix.slice(0, -1),
        };
  if (!mayList(who, listed.destination, listed.directory)) throw new PortalAnswer(permissionDenied());
  if (target.kind === 'root') {
    entries = await listDestinations(ports, who, asked);
  } else {
    entries = await listFolder(ports, who, target.destination, target.prefix, asked);
    segments = [target.destination, ...target.prefix.split('/').filter((s) => s !== '')];
    // A directory exists while a file is below it; a destination's own always does.
    if (entries.length === 0 && page.after === null && target.prefix !== '') return notFoundAnswer();
  }
  const listedRows = listingRows(entries.slice(0, page.limit), who);
  // Folders' file counts are for the eye: only the HTML page pays for them.
  const rows =
    listingType(c.req.header('accept')) === 'html'
      ? await withFolderFiles(ports, who, listed.destination, target.kind === 'root' ? '' : target.prefix, listedRows)
      : listedRows;
  const last = rows.at(-1);
  const next = entries.length > page.limit && last !== undefined ? cursorAfter(last) : null;
  const uploadForm = visitor.session !== null && target.kind === 'directory' && who.permissions.includes('put');
  const limit = c.req.query('limit') === undefined ? null : page.limit;
  const receipts =
    visitor.session === null ? [] : readReceipts(c.req.queries(UPLOADED_PARAMETER) ?? [], visitor.session.csrf);
  const uploaded =
    target.kind === 'directory' && receipts.length > 0
      ? await uploadedFiles(ports, target.destination, target.prefix, receipts)
      : [];
  return listingResponse({ visitor, segments, rows, next, limit, uploadForm, uploaded }, c.req.header('accept'));
}

/**
 * The upload form of a directory's page (multipart/form-data with the session's `csrf` first, then
 * one or more `file` parts; or the token in X-CSRF-Token): only for a browser session whose token
 * it carries. Each file is one
 * upload, as a PUT of its name in that directory would be; the browser goes back to the page, which
 * confirms the files registered.
 */
async function formUpload(
  c: Context,
  deps: UploadDeps,
  visitor: Visitor,
  target: Extract<TreeTarget, { kind: 'directory' }>,
) {
  const refused = csrfRefused;
  if (deps.store === null) return uploadsUnavailable();
  const boundary = formBoundary(c.req.header('content-type'));
  if (visitor.session === null) return refused();
  if (boundary === null || c.req.raw.body === null) return plain(400, 'A multipart/form-data body is expected');
  let tokenOk = headerToken(c, visitor);
  const receipts: string[] = [];
  for await (const part of formParts(c.req.raw.body, boundary)) {
    if (part.name === 'csrf') {
      tokenOk ||= constantTimeEqualText(await smallText(part.body), visitor.session.csrf);
    } else if (part.name === 'file' && part.filename !== null && part.filename !== '') {
      if (!tokenOk) return refused();
      if (!isSafeSegment(part.filename)) return plain(400, 'Invalid file name');
      const path = `${target.prefix}${part.filename}`;
      requirePermission(visitor, 'put', `${target.destination}/${path}`);
      const uploaded = await receiveUpload(deps, visitor, { destination: target.destination, path }, part.body, null);
      receipts.push(receiptOf(visitor.session.csrf, uploaded));
    }
  }
  if (!tokenOk) return refused();
  if (receipts.length === 0) return plain(400, 'No file was given');
  // Back to the folder's page, which confirms what was registered (upload-receipt.ts).
  const query = receipts.map((r) => `${UPLOADED_PARAMETER}=${encodeURIComponent(r)}`).join('&');
  return new Response(null, { status: 303, headers: { location: `${c.req.path}?${query}` } });
}

/**
 * The user may do `op` on this path (its permission and path rule), or is told it may not. The
 * destinations' root (null) has no path for a rule to judge.
 */
function requirePermission(visitor: Visitor, op: PortalOperation, ruled: string | null) {
  const { permissions, settings } = visitor.identity;
  if (ruled === null ? !permissions.includes(op) : !allowed(permissions, settings, op, ruled)) {
    throw new PortalAnswer(permissionDenied());
  }
}

const csrfRefused = () => plain(403, 'Permission denied: the request has no valid token of your session');

/** The session's token in the X-CSRF-Token header. */
function headerToken(c: Context, visitor: Visitor) {
  const token = c.req.header('x-csrf-token');
  return visitor.session !== null && token !== undefined && constantTimeEqualText(token, visitor.session.csrf);
}

const notAllowed = (allow: string) => plain(405, 'Method not allowed', { allow });

/** A permanent redirect keeping the query (a directory's URL is the one with '/'). */
function moved(location: string, c: Context) {
  const search = new URL(c.req.url).search;
  return new Response(null, { status: 301, headers: { location: `${location}${search}` } });
}

async function* bodyOf(c: Context): AsyncIterable<Uint8Array> {
  const body = c.req.raw.body;
  if (body === null) return;
  yield* body as unknown as AsyncIterable<Uint8Array>;
}

async function smallText(body: AsyncIterable<Uint8Array>) {
  let text = '';
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    text += decoder.decode(chunk, { stream: true });
    if (text.length > 1024) throw new PortalAnswer(plain(400, 'A form field is too long'));
  }
  return text + decoder.decode();
}
