import fs from 'node:fs';
import path from 'node:path';
import { deliverFile, type RemoteFiles } from '../../core/dissemination/deliver.ts';
import { deliveryFor, type TransferMethod } from '../../core/dissemination/methods.ts';
import { checkRemoteFiles } from '../../core/host-checks/remote-check.ts';
import { nodeHashing } from '../node/hashing.ts';
import { isWithin } from '../node/sources.ts';

/**
 * The `file` method: a local or mounted directory (local hosting, the demo). Paths are taken
 * under `root`, the host's directory as the process sees it; a path that would leave it is refused.
 */
export function fileRemote(root: string): RemoteFiles {
  const inside = (remotePath: string) => {
    const full = path.resolve(root, remotePath.replace(/^\/+/, ''));
    if (!isWithin(root, full)) {
      throw new Error(`Path ${remotePath} leaves the host directory`);
    }
    return full;
  };
  return {
    async makeDirectories(directory) {
      await fs.promises.mkdir(inside(directory), { recursive: true });
    },
    async write(remotePath, source, signal) {
      const handle = await fs.promises.open(inside(remotePath), 'w');
      let written = 0;
      try {
        for await (const chunk of source) {
          signal.throwIfAborted();
          for (let at = 0; at < chunk.byteLength; ) {
            at += (await handle.write(chunk, at, chunk.byteLength - at)).bytesWritten;
          }
          written += chunk.byteLength;
        }
        // On disk before the rename that gives it its final name.
        await handle.sync();
      } finally {
        await handle.close();
      }
      return written;
    },
    async size(remotePath) {
      const stat = await fs.promises.stat(inside(remotePath)).catch(() => null);
      return stat?.isFile() ? stat.size : null;
    },
    async rename(from, to) {
      await fs.promises.rename(inside(from), inside(to));
    },
    async remove(remotePath) {
      await fs.promises.rm(inside(remotePath), { force: true });
    },
  };
}

/**
 * The `file` method as a transfer method: a host's `dir` is a directory on this machine, which
 * must lie under one of `roots` (ECPDS_FILE_HOST_ROOTS), so that a host record cannot make a
 * mover write anywhere else.
 */
export function fileMethod(roots: readonly string[]): TransferMethod {
  const allowed = (host: { directory: string }) => {
    const directory = path.resolve(host.directory || '.');
    if (!roots.some((root) => isWithin(path.resolve(root), directory))) {
      throw new Error(`Directory ${host.directory} is not under a file host root (ECPDS_FILE_HOST_ROOTS)`);
    }
    return directory;
  };
  return {
    async send(host, file, source, signal) {
      const directory = allowed(host);
      await fs.promises.mkdir(directory, { recursive: true });
      return deliverFile(
        fileRemote(directory),
        deliveryFor({ ...host, directory: '' }, file),
        source,
        signal,
        nodeHashing,
      );
    },
    async check(host, file, signal) {
      const directory = allowed(host);
      // The directory must be there and writable, as a send would need it.
      await fs.promises.access(directory, fs.constants.W_OK);
      return checkRemoteFiles(fileRemote(directory), '', file, signal);
    },
    async close() {},
  };
}
