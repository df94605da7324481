import { conflict } from '../../core/common/errors.ts';
import type { PortalIdentity } from '../../core/portal/access.ts';
import type { MultipartLimits } from '../../core/portal/multipart-limits.ts';
import { uploadQuotaExceeded } from '../../core/portal/quota-ledger.ts';
import { stillAllowed } from '../../core/portal/still-admitted.ts';
import { startPortalTransfer } from '../../core/portal/transfers.ts';
import { isSafeSegment } from '../../core/portal/tree.ts';
import { registerUpload } from '../../core/portal/uploads.ts';
import type { Ports } from '../../core/ports.ts';
import { plain } from '../http/errors.ts';
import { PortalAnswer } from './errors.ts';
import { HTTPS, type Visitor } from './who.ts';

/**
 * Where the portal's uploads are kept (Node: a directory inside the source roots). A body is
 * written whole under a temporary name first: nothing is ever half-written under its final name.
 */
export interface UploadStore {
  receive(body: AsyncIterable<Uint8Array>): Promise<ReceivedUpload>;
  /** The parts of multipart uploads (the S3 endpoint's), until they are put together or given up. */
  multipart?: MultipartStore;
}

/** An upload in parts: whose, and where its file goes once complete. */
export interface MultipartUpload {
  userId: string;
  destination: string;
  path: string;
}

export interface StoredPart {
  partNumber: number;
  bytes: number;
  /** Hex MD5 of the part's bytes: its ETag. */
  md5: string;
}

/**
 * Where the parts of multipart uploads wait, across requests (and restarts): each part written
 * whole under a temporary name first, as uploads are.
 */
export interface MultipartStore {
  readonly limits: MultipartLimits;
  /** A new upload; answers its id (random: knowing one is what lets a client add to it). */
  create(upload: MultipartUpload): Promise<string>;
  /** The upload of this id, or null when there is none (never was, completed or aborted). */
  get(uploadId: string): Promise<MultipartUpload | null>;
  /** Stores a part (replacing one of the same number). */
  receivePart(uploadId: string, partNumber: number, body: AsyncIterable<Uint8Array>): Promise<StoredPart>;
  parts(uploadId: string): Promise<StoredPart[]>;
  /** The bytes of these parts, one after another. */
  read(uploadId: string, partNumbers: readonly number[]): AsyncIterable<Uint8Array>;
  remove(uploadId: string): Promise<void>;
  /** How many uploads this user has open (begun, neither completed, aborted nor stale). */
  openUploads(userId: string): Promise<number>;
  /** Aborts the stale uploads of every user, removing their parts (the periodic sweep); answers how many. */
  removeStale(): Promise<number>;
}

export interface ReceivedUpload {
  bytes: number;
  /**
   * Renames it into place, as the file of `path` below the destination's directory, replacing what
   * was there; answers where it is now (the data file's source). A conflict when a file is in the way
   * of a directory, or a directory where the file should go.
   */
  place(destination: string, path: string): Promise<string>;
  discard(): Promise<void>;
}

/** Moves an upload already in place (its `source`) to another path; what a rename over SFTP does to the bytes. */
export interface UploadMover {
  /** Where it is now; null when `source` is not one of the store's files (it is then left where it is). */
  move(source: string, destination: string, path: string): Promise<string | null>;
}

/** The directory of temporary files in the store: no destination of that name takes uploads. */
export const PARTIAL_DIRECTORY = '.partial';

export interface UploadDeps {
  ports: Ports;
  store: UploadStore | null;
  serverName: string;
  address: string;
  requestId: string;
  /** The protocol of the INH line, the traffic and `portal.excludeProtocols` (`https` when left out). */
  protocol?: string;
  /**
   * The uploader as it is once the bytes are in, before anything is registered: throws when it may
   * no longer put this file (its access ended while they came), and then nothing is registered.
   * By default the login check again (stillAllowed); an SFTP session has its own.
   */
  recheck?(): Promise<PortalIdentity>;
  /** The body's bytes were counted against the quota and in the traffic already (a multipart upload's parts). */
  counted?: boolean;
}

export interface Uploaded {
  dataFileId: number;
  transferId: number | null;
  destination: string;
  path: string;
  size: number;
  replaced: boolean;
}

/**
 * One upload into the tree: counted as a transfer of the user (its connection limit, its upload
 * quota, which it and the user's other uploads running may not go over together), stored, then registered as datafile/put registers a file. The
 * INH line and traffic carry the bytes received, whatever happens to them.
 */
export async function receiveUpload(
  deps: UploadDeps,
  visitor: Pick<Visitor, 'identity'>,
  target: { destination: string; path: string; temporaryNames?: boolean },
  body: AsyncIterable<Uint8Array>,
  declaredLength: number | null,
): Promise<Uploaded> {
  const { ports, store } = deps;
  if (store === null) throw new PortalAnswer(uploadsUnavailable());
  if (!isSafeSegment(target.destination) || target.destination === PARTIAL_DIRECTORY) {
    throw new PortalAnswer(plain(400, 'Uploads are not possible to this destination'));
  }
  const who = visitor.identity;
  // The upload quota is shared with the user's other uploads running: each chunk is asked for as it comes.
  const transfer = await startPortalTransfer(ports, who, {
    protocol: deps.protocol ?? HTTPS,
    server: deps.serverName,
    address: deps.address,
    action: 'upload',
    counted: deps.counted,
  });
  if (declaredLength !== null && declaredLength > transfer.left()) {
    await transfer.finish({ bytes: 0, file: null });
    throw quotaExceeded();
  }
  let bytes = 0;
  async function* counted() {
    for await (const chunk of body) {
      bytes += chunk.byteLength;
      if (transfer.allow(chunk.byteLength) < chunk.byteLength) throw quotaExceeded();
      yield chunk;
    }
  }
  let registered: Awaited<ReturnType<typeof registerUpload>>;
  try {
    const received = await store.receive(counted());
    if (declaredLength !== null && received.bytes !== declaredLength) {
      await received.discard();
      throw new PortalAnswer(plain(400, `Upload incomplete: ${received.bytes} of ${declaredLength} bytes received`));
    }
    // Whoever sent the bytes must still be allowed to put them there now that they are in.
    const recheck =
      deps.recheck ??
      (() =>
        stillAllowed(
          ports,
          who,
          { address: deps.address, protocol: deps.protocol ?? HTTPS },
          { operation: 'put', ...target },
        ));
    const now = await recheck().catch(discarding(received));
    const source = await received.place(target.destination, target.path).catch(discarding(received));
    registered = await registerUpload(ports, now, { ...target, source, requestId: deps.requestId });
  } catch (e) {
    await transfer.finish({ bytes, file: null, trafficBytes: deps.counted ? 0 : bytes });
    throw e;
  }
  const file = registered.file === null ? null : { ...registered.file, destination: target.destination };
  await transfer.finish({ bytes, file, trafficBytes: deps.counted ? 0 : bytes });
  return {
    dataFileId: registered.dataFileId,
    transferId: registered.file?.transferId ?? null,
    destination: target.destination,
    path: target.path,
    size: bytes,
    replaced: registered.replaced,
  };
}

const discarding = (received: ReceivedUpload) => async (e: unknown) => {
  await received.discard();
  throw e;
};

/** A server that keeps no uploads (a Worker: no place every mover reads back from). */
export const uploadsUnavailable = () => plain(501, 'Uploads are not available on this server');

export const quotaExceeded = uploadQuotaExceeded;

/** A file or directory in the way of an upload's path. */
export const inTheWay = (path: string) => conflict(`Cannot upload ${path}: another file or directory is in the way`);
