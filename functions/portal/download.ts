import { shownSource } from '../../core/data-files/sources.ts';
import type { SourceReader } from '../../core/dissemination/send.ts';
import type { PortalIdentity } from '../../core/portal/access.ts';
import { answerDownload, type DownloadRequest, type ServedFile, servedFile } from '../../core/portal/download.ts';
import { contentTypeOf } from '../../core/portal/media-types.ts';
import type { PortalFile } from '../../core/portal/ports.ts';
import { downloadQuotaExceeded } from '../../core/portal/quota-ledger.ts';
import { DEFAULT_PORTAL_RECHECK_MS } from '../../core/portal/revocation.ts';
import { stillAllowed } from '../../core/portal/still-admitted.ts';
import { startPortalTransfer } from '../../core/portal/transfers.ts';
import type { Ports } from '../../core/ports.ts';
import { openFileBytes } from '../../core/store/file-bytes.ts';
import { plain } from '../http/errors.ts';
import { HTTPS, type Visitor } from './who.ts';

export interface DownloadDeps {
  ports: Ports;
  sources: SourceReader;
  serverName: string;
  address: string;
  requestId: string;
  /** See PortalOptions.abandonAfterMs; null: never. */
  abandonAfterMs: number | null;
  /** The protocol the download is counted under; HTTPS when left out. */
  protocol?: string;
  /** How long a body goes on its last check of the user (ECPDS_PORTAL_RECHECK_MS; its default when left out). */
  recheckMs?: number;
}

/** What a GET or HEAD of a file asks for in its headers: a range and the preconditions RFC 9110 defines. */
export function downloadRequest(
  header: (name: string) => string | undefined,
  method: 'GET' | 'HEAD',
  download: boolean,
): DownloadRequest & { download: boolean } {
  const named = (name: string) => header(name) ?? null;
  return {
    method,
    range: named('range'),
    ifRange: named('if-range'),
    ifMatch: named('if-match'),
    ifNoneMatch: named('if-none-match'),
    ifModifiedSince: named('if-modified-since'),
    ifUnmodifiedSince: named('if-unmodified-since'),
    download,
  };
}

/**
 * A GET or HEAD of a file of the tree, as download tools expect it (core/portal/download.ts): the
 * bytes of the range asked for, as the movers read them (openFileBytes): its stored copy once it was
 * retrieved, else its source through the movers' reader (its containment, its size check). A GET of bytes is one transfer of the user: counted against its
 * connection limit while it runs, and ending with its traffic and INH line for the bytes sent, also
 * when the client goes away. A source that is gone or changed answers 502 before any byte. A HEAD
 * is answered from the registration alone: listing tools (rclone) send one per file, and no source
 * is opened for them.
 */
export async function downloadAnswer(
  deps: DownloadDeps,
  visitor: Pick<Visitor, 'identity'>,
  request: DownloadRequest & { download: boolean },
  destination: string,
  file: PortalFile,
  /** The file's validators as this protocol serves them (S3's always have an ETag). */
  served: ServedFile = servedFile(file),
): Promise<Response> {
  const { ports } = deps;
  const answer = answerDownload(served, request, ports.clock());
  if (answer.status !== 200 && answer.status !== 206) {
    return new Response(null, { status: answer.status, headers: answer.headers });
  }
  const headers: Record<string, string> = {
    ...answer.headers,
    'content-type': contentTypeOf(file.path),
    'cache-control': 'private, no-cache',
    // Whatever the bytes are, they never run as a page of the portal's origin.
    'content-security-policy': "default-src 'none'; sandbox",
    ...(request.download && { 'content-disposition': attachment(file.path) }),
  };
  if (request.method === 'HEAD') return new Response(null, { status: answer.status, headers });

  const stillMay = accessWatch(deps, visitor.identity, destination, file.path);
  const transfer = await startPortalTransfer(ports, visitor.identity, {
    protocol: deps.protocol ?? HTTPS,
    server: deps.serverName,
    address: deps.address,
    action: 'download',
  });
  const closeSource = new AbortController();
  const unreadable = async (why: string, fields: Record<string, unknown>) => {
    closeSource.abort();
    await transfer.finish({ bytes: 0, file: null });
    ports.logger.warn('portal download refused: its source cannot be read', {
      requestId: deps.requestId,
      destination,
      path: file.path,
      source: shownSource(file.source),
      ...fields,
    });
    return plain(502, `${file.path} cannot be downloaded now: ${why}`);
  };
  let source: Awaited<ReturnType<typeof openFileBytes>>;
  try {
    const ref = { source: file.source, objectKey: file.objectKey };
    source = await openFileBytes(ports.store, deps.sources, ref, closeSource.signal, answer.range ?? undefined);
  } catch (e) {
    return unreadable('its data is not available', { reason: e instanceof Error ? e.message : String(e) });
  }
  if (source.size !== file.size) {
    return unreadable('its data changed since it was registered', { size: source.size, registered: file.size });
  }
  let recorded: () => void = () => {};
  // The end is recorded after the response (Workers: the isolate and its database client stay for it).
  ports.waitUntil(new Promise<void>((resolve) => (recorded = resolve)));
  const expected = answer.range ? answer.range.end - answer.range.start + 1 : 0;
  const body = countedBody(source.stream, expected, deps.abandonAfterMs, {
    allow: (bytes) => transfer.allow(bytes),
    stillMay,
    end: async (bytes, error, released) => {
      // A source read whole was let go of (countedBody): aborting it too would only cost an error
      // thrown through its stream at the end of every download.
      if (!released) closeSource.abort();
      if (error !== null) {
        ports.logger.warn('portal download cut short', { requestId: deps.requestId, path: file.path, bytes, error });
      }
      await transfer
        .finish({ bytes, file: { ...file, destination } })
        .catch((e: unknown) => ports.logger.error('could not record a portal download', { reason: String(e) }))
        .finally(recorded);
    },
  });
  return new Response(body, { status: answer.status, headers });
}

/**
 * Whether the user may still download the file while its body goes (stillAllowed, as an SFTP handle
 * asks): read again once `recheckMs` passed since the last check, and at once after a change of the
 * user made in this process; between those, nothing is read. Throws once the user may not.
 */
function accessWatch(deps: DownloadDeps, identity: PortalIdentity, destination: string, path: string) {
  const { ports } = deps;
  const recheckMs = deps.recheckMs ?? DEFAULT_PORTAL_RECHECK_MS;
  const attempt = { address: deps.address, protocol: deps.protocol ?? HTTPS };
  // Taken before the body starts: a change of the user from here on is seen at its next chunk.
  let mark = ports.portalLogins.mark();
  let checkedAt = Date.now();
  return async () => {
    if (Date.now() - checkedAt < recheckMs && !ports.portalLogins.changedSince(identity.userId, mark)) return;
    const next = ports.portalLogins.mark();
    await stillAllowed(ports, identity, attempt, { operation: 'get', destination, path });
    mark = next;
    checkedAt = Date.now();
  };
}

/**
 * The bytes of a source as a response body, read as the client takes them: `end` is told once how
 * many went out, as the last ones go (so the INH line is written by the time a client has them),
 * when the client went away (or nothing read for `abandonAfterMs`), or when the source failed or ran
 * short, or the user's download quota was spent, or its access to the file ended (the body then fails
 * rather than end: the client sees an incomplete answer, never a whole one).
 * `released` tells `end` whether the source was let go of, read whole; otherwise it is the caller's to stop.
 */
function countedBody(
  stream: AsyncIterable<Uint8Array>,
  expected: number,
  abandonAfterMs: number | null,
  hooks: {
    /** How many of these bytes may go (the download quota); fewer ends the body with an error after them. */
    allow(bytes: number): number;
    /** Before each chunk: throws once the user may no longer have more of the file. */
    stillMay(): Promise<void>;
    end(bytes: number, error: string | null, released: boolean): Promise<void>;
  },
) {
  const chunks = stream[Symbol.asyncIterator]();
  let sent = 0;
  let ended = false;
  let released = false;
  /** Once every byte is read: the source's iterator returns, which closes it without an error. */
  const release = async () => {
    released = await Promise.resolve(chunks.return?.()).then(
      () => chunks.return !== undefined,
      () => false,
    );
  };
  let reading = false;
  let lastRead = Date.now();
  const watch =
    abandonAfterMs === null
      ? undefined
      : setInterval(
          () => {
            // A read of the source may take its time; a body nobody asks for more of is abandoned.
            if (!reading && Date.now() - lastRead >= abandonAfterMs) void end(null);
          },
          Math.max(100, abandonAfterMs / 4),
        );
  const end = async (error: string | null) => {
    if (ended) return;
    ended = true;
    clearInterval(watch);
    await hooks.end(sent, error, released);
  };
  const source = {
    // workerd's own: sends a Content-Length for a stream made here (elsewhere it is left aside).
    expectedLength: expected,
    async pull(controller: ReadableStreamDefaultController<Uint8Array>) {
      try {
        if (sent === expected) {
          await release();
          await end(null);
          controller.close();
          return;
        }
        reading = true;
        await hooks.stillMay();
        const next = await chunks.next().finally(() => {
          reading = false;
          lastRead = Date.now();
        });
        if (next.done) throw new Error(`the source ended after ${sent} of ${expected} bytes`);
        // A source that grew meanwhile gives no more than was promised.
        const chunk = next.value.subarray(0, expected - sent);
        const allowed = hooks.allow(chunk.byteLength);
        if (allowed < chunk.byteLength) {
          sent += allowed;
          if (allowed > 0) controller.enqueue(chunk.subarray(0, allowed));
          throw downloadQuotaExceeded();
        }
        sent += chunk.byteLength;
        if (sent === expected) {
          await release();
          // Accounted before the last bytes go: a client that has them all finds its INH line written.
          await end(null);
        }
        controller.enqueue(chunk);
        if (sent === expected) controller.close();
      } catch (e) {
        await end(e instanceof Error ? e.message : String(e));
        controller.error(cutShort(e));
      }
    },
    async cancel() {
      await end(null);
    },
  };
  return new ReadableStream<Uint8Array>(source, { highWaterMark: 0 });
}

/**
 * The error a body fails with once its headers went: the client's answer is cut, and that is all.
 * @hono/node-server writes `Error: <message>` into the body of an answer whose stream fails, which
 * a client would take for bytes of the file, unless the failure is a premature close.
 */
function cutShort(cause: unknown) {
  return Object.assign(new Error('the download was cut short', { cause }), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
}

/** `attachment` with the file's name: ASCII for every client, UTF-8 (RFC 6266) for those that read it. */
function attachment(path: string) {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
