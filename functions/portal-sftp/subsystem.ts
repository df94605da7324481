import type { FileEntry, SFTPWrapper } from 'ssh2';
import ssh2 from 'ssh2';
import { isServiceError } from '../../core/common/errors.ts';
import type { SourceReader } from '../../core/dissemination/send.ts';
import { checkDownloadQuota, type PortalIdentity, PortalLoginRefused } from '../../core/portal/access.ts';
import { folderTime, listDestinations, listFolder, mayMakeDirectory } from '../../core/portal/folders.ts';
import { mayList } from '../../core/portal/listing-rule.ts';
import { allowed } from '../../core/portal/options.ts';
import type { PortalEntry, PortalOperation } from '../../core/portal/ports.ts';
import { mayStill } from '../../core/portal/revocation.ts';
import { ruledPath, type SftpPlace, sftpPath, sftpPlace, sftpSegments } from '../../core/portal/sftp-paths.ts';
import { startPortalTransfer } from '../../core/portal/transfers.ts';
import { deletePortalFile, registerUpload, treeViewer } from '../../core/portal/uploads.ts';
import type { Ports } from '../../core/ports.ts';
import { PortalAnswer } from '../portal/errors.ts';
import { receiveUpload, type UploadMover, type UploadStore } from '../portal/upload.ts';
import { directoryAttributes, entryOf, fileAttributes } from './attributes.ts';
import { checkFile } from './check-file.ts';
import { DownloadHandle, SourceChanged, UploadBody } from './file-handles.ts';

const { STATUS_CODE, OPEN_MODE } = ssh2.utils.sftp;

/** The portal's protocol name for SFTP: `portal.excludeProtocols`, DEA and INH lines. */
export const SFTP = 'sftp';

/** Entries per READDIR answer: a large directory is read a page at a time from the database. */
export const READDIR_BATCH = 100;

export interface SubsystemDeps {
  ports: Ports;
  sources: SourceReader;
  uploads: (UploadStore & UploadMover) | null;
  serverName: string;
  address: string;
  /**
   * The logged-in user as it is now: the login check again (being active, destinations, permissions,
   * the credentials the session was opened with; limits are judged as each transfer starts). Throws
   * PortalLoginRefused once it may no longer.
   */
  identity(): Promise<PortalIdentity>;
  /** Directories made by MKDIR that no file is in yet, and when: the user's on this server (made-directories.ts). */
  madeDirectories: Map<string, Date>;
  /** Called on each request answered (not one refused for want of access): the session is not idle. */
  touch(): void;
}

/** An answer to a request other than OK: its status and message. */
class Refusal extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}
const noSuchFile = () => new Refusal(STATUS_CODE.NO_SUCH_FILE, 'No such file');
const denied = () => new Refusal(STATUS_CODE.PERMISSION_DENIED, 'Permission denied');
const unsupported = (what: string) => new Refusal(STATUS_CODE.OP_UNSUPPORTED, `${what} is not supported here`);
const failure = (message: string) => new Refusal(STATUS_CODE.FAILURE, message);

type DirectoryHandle = { kind: 'dir'; place: SftpPlace; after: string | null; extra: FileEntry[]; done: boolean };
type ReadHandle = { kind: 'read'; download: DownloadHandle };
type WriteHandle = { kind: 'write'; place: BelowPlace; body: UploadBody; finished: Promise<unknown> };
type BelowPlace = Extract<SftpPlace, { kind: 'below' }>;
type Handle = DirectoryHandle | ReadHandle | WriteHandle;

/**
 * One SFTP channel over the portal's tree for a logged-in user: the requests the tree can answer,
 * each under its permission and path rule, every other one OP_UNSUPPORTED. Handles left open when
 * the channel ends are closed as if the client had (a download accounted, an upload discarded).
 */
export function serveSubsystem(sftp: SFTPWrapper, deps: SubsystemDeps) {
  const { ports } = deps;
  const handles = new Map<number, Handle>();
  let nextHandle = 1;
  const { madeDirectories } = deps;

  const answer = (id: number, work: () => Promise<void>) => {
    work().then(deps.touch, (e: unknown) => {
      const refusal = asRefusal(e);
      // A request refused for want of access does not keep the session alive.
      if (!isAccessRefusal(e, refusal)) deps.touch();
      if (refusal.code === STATUS_CODE.FAILURE) {
        ports.logger.warn('portal sftp request failed', { address: deps.address, reason: refusal.message });
      }
      sftp.status(id, refusal.code, refusal.message);
    });
  };
  const asRefusal = (e: unknown): Refusal => {
    if (e instanceof Refusal) return e;
    if (e instanceof PortalLoginRefused) {
      return e.overLimit ? failure('Too many transfers at once or quota spent; try again later') : denied();
    }
    if (e instanceof SourceChanged) return failure(e.message);
    if (isServiceError(e)) {
      if (e.kind === 'notFound') return noSuchFile();
      return failure(e.message);
    }
    if (e instanceof PortalAnswer) return failure(`Refused (${e.response.status})`);
    return failure(e instanceof Error ? e.message : String(e));
  };
  const isAccessRefusal = (e: unknown, refusal: Refusal) =>
    e instanceof PortalLoginRefused ||
    refusal.code === STATUS_CODE.PERMISSION_DENIED ||
    refusal.code === STATUS_CODE.OP_UNSUPPORTED;
  /**
   * The user as it is now, still allowed what an open handle does (it was opened under the access of
   * then): its destination still the user's, its operation still permitted there.
   */
  const stillAllowed = async (handle: Handle) => {
    const who = await deps.identity();
    const [operation, destination, path]: [PortalOperation, string, string] =
      handle.kind === 'read'
        ? ['get', handle.download.file.destination, handle.download.file.path]
        : handle.kind === 'write'
          ? ['put', handle.place.destination, handle.place.path]
          : handle.place.kind === 'root'
            ? ['dir', '', '']
            : ['dir', handle.place.destination, handle.place.kind === 'below' ? handle.place.path : ''];
    const ok = destination === '' ? who.permissions.includes(operation) : mayStill(who, operation, destination, path);
    if (!ok) throw denied();
    return who;
  };
  const newHandle = (handle: Handle) => {
    const id = nextHandle++;
    handles.set(id, handle);
    const buffer = Buffer.alloc(4);
    buffer.writeUInt32BE(id);
    return buffer;
  };
  const handleOf = (raw: Buffer) => (raw.length === 4 ? handles.get(raw.readUInt32BE(0)) : undefined);
  const dropHandle = (raw: Buffer) => handles.delete(raw.readUInt32BE(0));

  /** A path as the user's place in the tree; a destination not the user's is as missing as one that doesn't exist. */
  const placeOf = (path: string, who: PortalIdentity): SftpPlace => {
    const segments = sftpSegments(path);
    if (segments === null) throw noSuchFile();
    const place = sftpPlace(segments);
    if (place.kind !== 'root' && !who.destinations.includes(place.destination)) throw noSuchFile();
    return place;
  };
  const require = (who: PortalIdentity, op: PortalOperation, place: SftpPlace) => {
    const ok =
      place.kind === 'root'
        ? who.permissions.includes(op)
        : allowed(who.permissions, who.settings, op, ruledPath(place));
    if (!ok) throw denied();
  };
  const now = () => ports.clock();
  // The tree as this user sees it: its own held uploads among the files (treeViewer).
  const fileAt = (place: BelowPlace, who: PortalIdentity) =>
    ports.repos.portal.file(place.destination, place.path, now(), treeViewer(who));
  const isDirectory = async (place: BelowPlace, who: PortalIdentity) =>
    madeDirectories.has(`${place.destination}/${place.path}`) ||
    (await isDirectoryOfFiles(place.destination, place.path, who));
  const isDirectoryOfFiles = async (destination: string, path: string, who: PortalIdentity) => {
    const page = { after: null, limit: 1 };
    return (await ports.repos.portal.list(destination, `${path}/`, now(), page, treeViewer(who))).length > 0;
  };
  /** A directory's attributes, its time its newest file's (core/portal/folders.ts), or when MKDIR made it. */
  const directoryOf = async (place: SftpPlace, who: PortalIdentity) => {
    if (place.kind === 'root') return directoryAttributes(who, await folderTime(ports, who, null));
    const path = place.kind === 'below' ? place.path : '';
    const time = await folderTime(ports, who, place.destination, path);
    return directoryAttributes(who, time ?? madeDirectories.get(`${place.destination}/${path}`) ?? null);
  };

  const statOf = async (path: string) => {
    const who = await deps.identity();
    const place = placeOf(path, who);
    if (place.kind !== 'below') return directoryOf(place, who);
    const file = await fileAt(place, who);
    if (file !== null) return fileAttributes(file, who);
    if (await isDirectory(place, who)) return directoryOf(place, who);
    throw noSuchFile();
  };

  sftp.on('REALPATH', (id, path) =>
    answer(id, async () => {
      const segments = sftpSegments(path);
      if (segments === null) throw noSuchFile();
      const full = sftpPath(segments);
      sftp.name(id, [{ filename: full, longname: full, attrs: {} as FileEntry['attrs'] }]);
    }),
  );
  for (const event of ['STAT', 'LSTAT'] as const) {
    sftp.on(event, (id: number, path: string) => answer(id, async () => sftp.attrs(id, await statOf(path))));
  }
  sftp.on('FSTAT', (id, raw) =>
    answer(id, async () => {
      const handle = handleOf(raw);
      if (handle === undefined) throw failure('Invalid handle');
      const who = await stillAllowed(handle);
      if (handle.kind === 'read') sftp.attrs(id, fileAttributes(handle.download.file, who));
      else if (handle.kind === 'dir') sftp.attrs(id, await directoryOf(handle.place, who));
      else sftp.attrs(id, { mode: 0o100644 } as FileEntry['attrs']);
    }),
  );

  sftp.on('OPENDIR', (id, path) =>
    answer(id, async () => {
      const who = await deps.identity();
      const place = placeOf(path, who);
      if (!mayList(who, place.kind === 'root' ? null : place.destination, place.kind === 'below' ? place.path : '')) {
        throw denied();
      }
      if (place.kind === 'below' && (await fileAt(place, who)) !== null) throw failure('Not a directory');
      if (place.kind === 'below' && !(await isDirectory(place, who))) throw noSuchFile();
      // Directories made by the user's channels and still empty are listed after the others.
      const prefix = place.kind === 'root' ? null : place.kind === 'destination' ? '' : `${place.path}/`;
      const extra: FileEntry[] = [];
      if (prefix !== null) {
        const destination = (place as Exclude<SftpPlace, { kind: 'root' }>).destination;
        for (const [made, at] of madeDirectories) {
          const rest = made.slice(destination.length + 1);
          if (!made.startsWith(`${destination}/${prefix}`) || rest.slice(prefix.length).includes('/')) continue;
          if (await isDirectoryOfFiles(destination, rest, who)) continue;
          extra.push(entryOf({ type: 'directory', name: rest.slice(prefix.length), modifiedAt: at }, who));
        }
      }
      sftp.handle(id, newHandle({ kind: 'dir', place, after: null, extra, done: false }));
    }),
  );

  sftp.on('READDIR', (id, raw) =>
    answer(id, async () => {
      const handle = handleOf(raw);
      if (handle?.kind !== 'dir') throw failure('Invalid handle');
      const who = await stillAllowed(handle);
      if (handle.done) return sftp.status(id, STATUS_CODE.EOF);
      const page = { after: handle.after, limit: READDIR_BATCH };
      let entries: PortalEntry[];
      if (handle.place.kind === 'root') entries = await listDestinations(ports, who, page);
      else {
        const prefix = handle.place.kind === 'destination' ? '' : `${handle.place.path}/`;
        entries = await listFolder(ports, who, handle.place.destination, prefix, page);
      }
      const last = entries.at(-1);
      if (last !== undefined) handle.after = last.type === 'directory' ? `${last.name}/` : last.name;
      const names = entries.map((e) => entryOf(e, who));
      if (entries.length < READDIR_BATCH) {
        handle.done = true;
        names.push(...handle.extra);
      }
      if (names.length === 0) return sftp.status(id, STATUS_CODE.EOF);
      sftp.name(id, names);
    }),
  );

  sftp.on('OPEN', (id, path, flags) =>
    answer(id, async () => {
      const who = await deps.identity();
      const place = placeOf(path, who);
      const writing = (flags & (OPEN_MODE.WRITE | OPEN_MODE.APPEND | OPEN_MODE.CREAT | OPEN_MODE.TRUNC)) !== 0;
      if (place.kind !== 'below') {
        if (writing) throw denied();
        throw failure('Is a directory');
      }
      if (writing) return openForWriting(id, who, place, flags);
      require(who, 'get', place);
      await checkDownloadQuota(ports, who, { login: who.userId, address: deps.address, protocol: SFTP });
      const file = await fileAt(place, who);
      if (file === null) throw (await isDirectory(place, who)) ? failure('Is a directory') : noSuchFile();
      const transfer = await startPortalTransfer(ports, who, {
        protocol: SFTP,
        server: deps.serverName,
        address: deps.address,
        action: 'download',
      });
      const download = new DownloadHandle(
        ports.store,
        deps.sources,
        { ...file, destination: place.destination },
        transfer,
      );
      try {
        await download.open();
      } catch (e) {
        await download.close();
        if (e instanceof SourceChanged) throw e;
        ports.logger.warn('portal sftp download refused: its source cannot be read', {
          destination: place.destination,
          path: place.path,
          reason: e instanceof Error ? e.message : String(e),
        });
        throw failure(`${place.path} cannot be downloaded now: its data is not available`);
      }
      sftp.handle(id, newHandle({ kind: 'read', download }));
    }),
  );

  const openForWriting = async (id: number, who: PortalIdentity, place: BelowPlace, flags: number) => {
    require(who, 'put', place);
    if (deps.uploads === null) throw unsupported('Uploading');
    if ((flags & OPEN_MODE.APPEND) !== 0) throw unsupported('Appending to a file');
    if ((flags & OPEN_MODE.EXCL) !== 0 && (await fileAt(place, who)) !== null) throw failure('File exists');
    if (await isDirectory(place, who)) throw failure('Is a directory');
    const body = new UploadBody();
    const writeHandle: WriteHandle = { kind: 'write', place, body, finished: Promise.resolve() };
    const upload = receiveUpload(
      {
        ports,
        store: deps.uploads,
        serverName: deps.serverName,
        address: deps.address,
        requestId: `sftp-${deps.address}`,
        protocol: SFTP,
        // Whoever closes the file must still be allowed to put it, or nothing is registered.
        recheck: () => stillAllowed(writeHandle),
      },
      { identity: who },
      { destination: place.destination, path: place.path, temporaryNames: true },
      body,
      null,
    );
    // A failure before the close (a quota spent) ends the writes waiting on the body.
    const finished = upload.catch((e: unknown) => {
      body.fail(e instanceof Error ? e : new Error(String(e)));
      throw e;
    });
    finished.catch(() => undefined);
    writeHandle.finished = finished;
    sftp.handle(id, newHandle(writeHandle));
  };

  sftp.on('READ', (id, raw, offset, length) =>
    answer(id, async () => {
      const handle = handleOf(raw);
      if (handle?.kind !== 'read') throw failure('Invalid handle');
      await stillAllowed(handle);
      const data = await handle.download.read(offset, length);
      if (data === null) sftp.status(id, STATUS_CODE.EOF);
      else sftp.data(id, data);
    }),
  );
  sftp.on('WRITE', (id, raw, offset, data) =>
    answer(id, async () => {
      const handle = handleOf(raw);
      if (handle?.kind !== 'write') throw failure('Invalid handle');
      await stillAllowed(handle).catch((e: unknown) => {
        // What was written is discarded: the file will not be registered.
        handle.body.fail(new Error('access to the file ended'));
        throw e;
      });
      await handle.body.write(offset, data);
      sftp.status(id, STATUS_CODE.OK);
    }),
  );
  sftp.on('CLOSE', (id, raw) =>
    answer(id, async () => {
      const handle = handleOf(raw);
      if (handle === undefined) throw failure('Invalid handle');
      dropHandle(raw);
      // A download is accounted and an upload discarded even when the close is refused.
      const refused = await stillAllowed(handle).then(
        () => null,
        (e: unknown) => e,
      );
      if (refused !== null && handle.kind === 'write') handle.body.fail(new Error('access to the file ended'));
      await closeHandle(handle).catch((e: unknown) => {
        if (refused === null) throw e;
      });
      if (refused !== null) throw refused;
      sftp.status(id, STATUS_CODE.OK);
    }),
  );
  const closeHandle = async (handle: Handle) => {
    if (handle.kind === 'read') await handle.download.close();
    if (handle.kind === 'write') {
      handle.body.end();
      await handle.finished;
    }
  };

  sftp.on('REMOVE', (id, path) =>
    answer(id, async () => {
      const who = await deps.identity();
      const place = placeOf(path, who);
      if (place.kind !== 'below') throw denied();
      require(who, 'delete', place);
      const file = await fileAt(place, who);
      if (file === null) throw (await isDirectory(place, who)) ? failure('Is a directory') : noSuchFile();
      await deletePortalFile(ports, who, file, `sftp-${deps.address}`);
      sftp.status(id, STATUS_CODE.OK);
    }),
  );

  sftp.on('MKDIR', (id, path) =>
    answer(id, async () => {
      const who = await deps.identity();
      const place = placeOf(path, who);
      // The root's directories are the user's destinations, made by the operator only.
      if (place.kind !== 'below') throw place.kind === 'root' ? denied() : failure('File exists');
      // The one rule of every protocol: `put` implies it (core/portal/folders.ts).
      if (!mayMakeDirectory(who, place.destination, place.path)) throw denied();
      if ((await fileAt(place, who)) !== null || (await isDirectory(place, who))) throw failure('File exists');
      const parent = place.path.includes('/') ? place.path.slice(0, place.path.lastIndexOf('/')) : null;
      if (parent !== null && !(await isDirectory({ ...place, path: parent }, who))) throw noSuchFile();
      madeDirectories.set(`${place.destination}/${place.path}`, now());
      sftp.status(id, STATUS_CODE.OK);
    }),
  );
  sftp.on('RMDIR', (id, path) =>
    answer(id, async () => {
      const who = await deps.identity();
      const place = placeOf(path, who);
      if (place.kind !== 'below') throw denied();
      require(who, 'rmdir', place);
      if (await isDirectoryOfFiles(place.destination, place.path, who)) throw failure('Directory not empty');
      if (!madeDirectories.delete(`${place.destination}/${place.path}`)) {
        throw (await fileAt(place, who)) !== null ? failure('Not a directory') : noSuchFile();
      }
      sftp.status(id, STATUS_CODE.OK);
    }),
  );

  sftp.on('RENAME', (id, from, to) =>
    answer(id, async () => {
      const who = await deps.identity();
      const old = placeOf(from, who);
      const renamed = placeOf(to, who);
      if (old.kind !== 'below' || renamed.kind !== 'below') throw denied();
      if (old.destination !== renamed.destination) throw failure('A file cannot move to another destination');
      require(who, 'rename', old);
      require(who, 'rename', renamed);
      const file = await fileAt(old, who);
      if (file === null) throw (await isDirectory(old, who)) ? unsupported('Renaming a directory') : noSuchFile();
      if ((await fileAt(renamed, who)) !== null || (await isDirectory(renamed, who))) throw failure('File exists');
      // The bytes move with the name when they are an upload; a name of the upload store is its path.
      const moved = (await deps.uploads?.move(file.source, renamed.destination, renamed.path)) ?? null;
      try {
        await registerUpload(ports, who, {
          destination: renamed.destination,
          path: renamed.path,
          source: moved ?? file.source,
          requestId: `sftp-${deps.address}`,
          temporaryNames: true,
        });
      } catch (e) {
        if (moved !== null) await deps.uploads?.move(moved, old.destination, old.path).catch(() => null);
        throw e;
      }
      await deletePortalFile(ports, who, file, `sftp-${deps.address}`);
      sftp.status(id, STATUS_CODE.OK);
    }),
  );

  // A registered file's attributes are its own (size, time of registration): clients that set a
  // modification time or mode after an upload (rclone, scp -p) are answered OK and the attributes ignored.
  sftp.on('SETSTAT', (id, path) =>
    answer(id, async () => {
      await statOf(path);
      sftp.status(id, STATUS_CODE.OK);
    }),
  );
  sftp.on('FSETSTAT', (id, raw) =>
    answer(id, async () => {
      const handle = handleOf(raw);
      if (handle === undefined) throw failure('Invalid handle');
      await stillAllowed(handle);
      sftp.status(id, STATUS_CODE.OK);
    }),
  );
  for (const event of ['READLINK', 'SYMLINK'] as const) {
    sftp.on(event, (id: number) => {
      sftp.status(id, STATUS_CODE.OP_UNSUPPORTED, `${event} is not supported here`);
    });
  }
  // The check-file extensions (a file's known sums, check-file.ts); any other extension is not supported.
  sftp.on('EXTENDED', (id, name, data) =>
    answer(id, async () => {
      const readHandle = async (raw: Buffer) => {
        const handle = handleOf(raw);
        if (handle?.kind !== 'read') throw failure('Invalid handle');
        await stillAllowed(handle);
        return handle.download.file;
      };
      const status = await checkFile(sftp, id, name, data, { ports, identity: deps.identity, readHandle });
      if (status !== null) throw new Refusal(status.code, status.message);
    }),
  );

  /** Closes what the client left open: downloads are accounted, unfinished uploads discarded. */
  return async function closeAll() {
    const left = [...handles.values()];
    handles.clear();
    await Promise.all(
      left.map(async (handle) => {
        if (handle.kind === 'write') handle.body.fail(new Error('the session ended before the file was closed'));
        await closeHandle(handle).catch(() => undefined);
      }),
    );
  };
}
