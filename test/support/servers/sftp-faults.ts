import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import ssh2, { type Connection, type SFTPWrapper } from 'ssh2';

const { Server, utils } = ssh2;
const { OPEN_MODE, STATUS_CODE } = utils.sftp;

/**
 * An in-process SFTP server (ssh2) over a temporary directory that misbehaves on demand: what a
 * real sshd will not do when asked, for the SFTP method's failure paths. It announces no
 * extension, so clients rename the plain way.
 */
export interface Faults {
  /** Cut the connection once this many bytes were written in total. */
  dropAfterBytes?: number;
  /** Stop answering write requests (the connection stays up). */
  stallWrites?: boolean;
  /** Answer stat with a size this much off. */
  sizeOffBy?: number;
  /** Refuse every rename. */
  refuseRename?: boolean;
  /** Answer an open with a HANDLE packet shorter than the handle it announces (a protocol error). */
  malformedHandle?: boolean;
}

export interface FaultServer {
  port: number;
  user: string;
  password: string;
  root: string;
  faults: Faults;
  /** Connections accepted so far. */
  connections(): number;
  /** Connections open now. */
  open(): number;
  /** Every file under the root, relative to it. */
  files(): string[];
  stop(): Promise<void>;
}

export async function startFaultServer(): Promise<FaultServer> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-sftp-faults-'));
  const user = 'faulty';
  const password = 'fault-password';
  const hostKey = utils.generateKeyPairSync('ed25519').private;
  const live = new Set<Connection>();
  let connections = 0;
  const state: { faults: Faults } = { faults: {} };

  const server = new Server({ hostKeys: [hostKey] }, (client) => {
    connections++;
    live.add(client);
    client.on('close', () => live.delete(client));
    client.on('error', () => undefined);
    client.on('authentication', (ctx) => {
      if (ctx.method === 'password' && ctx.username === user && ctx.password === password) ctx.accept();
      else ctx.reject(['password']);
    });
    client.on('ready', () => {
      client.on('session', (accept) => {
        accept().on('sftp', (acceptSftp) => serve(acceptSftp(), client, root, state));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    port: (server.address() as AddressInfo).port,
    user,
    password,
    root,
    get faults() {
      return state.faults;
    },
    set faults(faults: Faults) {
      state.faults = faults;
    },
    connections: () => connections,
    open: () => live.size,
    files: () =>
      fs
        .readdirSync(root, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
        .sort(),
    async stop() {
      for (const client of live) client.end();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

function serve(sftp: SFTPWrapper, client: Connection, root: string, state: { faults: Faults }) {
  const handles = new Map<string, number>();
  let nextHandle = 0;
  let written = 0;
  const local = (remote: string) => {
    const full = path.resolve(root, remote.replace(/^\/+/, ''));
    if (full !== root && !full.startsWith(`${root}/`)) throw new Error('outside the root');
    return full;
  };
  /** Runs a filesystem step and answers its status. */
  const answer = (reqid: number, step: () => void) => {
    try {
      step();
      sftp.status(reqid, STATUS_CODE.OK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      sftp.status(reqid, code === 'ENOENT' ? STATUS_CODE.NO_SUCH_FILE : STATUS_CODE.FAILURE, String(error));
    }
  };

  sftp.on('OPEN', (reqid, filename, flags) => {
    if (state.faults.malformedHandle) return sendRaw(sftp, malformedHandle(reqid));
    try {
      const mode = flags & OPEN_MODE.WRITE ? (flags & OPEN_MODE.TRUNC ? 'w' : 'r+') : 'r';
      const fd = fs.openSync(local(filename), mode);
      const handle = Buffer.from(String(nextHandle++));
      handles.set(handle.toString(), fd);
      sftp.handle(reqid, handle);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      sftp.status(reqid, code === 'ENOENT' ? STATUS_CODE.NO_SUCH_FILE : STATUS_CODE.FAILURE, String(error));
    }
  });
  sftp.on('WRITE', (reqid, handle, offset, data) => {
    const { dropAfterBytes, stallWrites } = state.faults;
    if (stallWrites) return;
    const fd = handles.get(handle.toString());
    if (fd === undefined) return sftp.status(reqid, STATUS_CODE.FAILURE, 'bad handle');
    const take = dropAfterBytes === undefined ? data.length : Math.min(data.length, dropAfterBytes - written);
    fs.writeSync(fd, data, 0, take, offset);
    written += take;
    if (dropAfterBytes !== undefined && written >= dropAfterBytes) {
      // As a crashed server or a cut link: no answer, no goodbye.
      (client as unknown as { _sock: { destroy(): void } })._sock.destroy();
      return;
    }
    sftp.status(reqid, STATUS_CODE.OK);
  });
  sftp.on('CLOSE', (reqid, handle) => {
    const fd = handles.get(handle.toString());
    handles.delete(handle.toString());
    answer(reqid, () => fd !== undefined && fs.closeSync(fd));
  });
  const stat = (reqid: number, remote: string) => {
    try {
      const stats = fs.statSync(local(remote));
      sftp.attrs(reqid, {
        mode: stats.mode,
        uid: stats.uid,
        gid: stats.gid,
        size: stats.isFile() ? stats.size + (state.faults.sizeOffBy ?? 0) : stats.size,
        atime: Math.floor(stats.atimeMs / 1000),
        mtime: Math.floor(stats.mtimeMs / 1000),
      });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      sftp.status(reqid, code === 'ENOENT' ? STATUS_CODE.NO_SUCH_FILE : STATUS_CODE.FAILURE, String(error));
    }
  };
  sftp.on('STAT', stat);
  sftp.on('LSTAT', stat);
  sftp.on('MKDIR', (reqid, remote) => answer(reqid, () => fs.mkdirSync(local(remote))));
  sftp.on('REMOVE', (reqid, remote) => answer(reqid, () => fs.unlinkSync(local(remote))));
  sftp.on('SETSTAT', (reqid) => sftp.status(reqid, STATUS_CODE.OK));
  sftp.on('RENAME', (reqid, from, to) => {
    if (state.faults.refuseRename) return sftp.status(reqid, STATUS_CODE.PERMISSION_DENIED, 'Rename refused');
    answer(reqid, () => {
      // SFTP v3 rename does not replace, as most servers do.
      if (fs.existsSync(local(to))) throw new Error('target exists');
      fs.renameSync(local(from), local(to));
    });
  });
  sftp.on('REALPATH', (reqid, remote) => {
    sftp.name(reqid, [
      {
        filename: path.posix.resolve('/', remote),
        longname: remote,
        attrs: {} as never,
      },
    ]);
  });
}

/** A HANDLE packet announcing a handle of 1000 bytes and holding none. */
function malformedHandle(reqid: number): Buffer {
  const packet = Buffer.alloc(4 + 1 + 4 + 4);
  packet.writeUInt32BE(packet.length - 4, 0);
  packet[4] = 102; // SSH_FXP_HANDLE
  packet.writeUInt32BE(reqid, 5);
  packet.writeUInt32BE(1000, 9);
  return packet;
}

/** Bytes on the SFTP channel as they are: ssh2's server API only writes well-formed packets. */
function sendRaw(sftp: SFTPWrapper, bytes: Buffer) {
  const raw = sftp as unknown as {
    _protocol: { channelData(id: number, data: Buffer): void };
    outgoing: { id: number };
  };
  raw._protocol.channelData(raw.outgoing.id, bytes);
}
