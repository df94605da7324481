import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'ssh2';
import { addKey } from '../../../core/portal/key-admin.ts';
import { nodeUploadStore } from '../../../functions/node/portal-uploads.ts';
import { nodeSourceReader } from '../../../functions/node/sources.ts';
import { loadOrCreateHostKey } from '../../../functions/portal-sftp/host-key.ts';
import {
  type PortalSftpOptions,
  type PortalSftpServer,
  startPortalSftp,
} from '../../../functions/portal-sftp/server.ts';
import { portalScene } from '../support.ts';

/** The portal's scene with its SFTP server on a port of its own, in this process, and helpers for real clients. */
export async function sftpScene(
  options: Pick<PortalSftpOptions, 'idleTimeoutMs' | 'loginTimeoutMs' | 'recheckMs' | 'maxStartups'> = {},
  scene: Parameters<typeof portalScene>[0] = {},
) {
  const s = await portalScene(scene);
  const sftp: PortalSftpServer = await startPortalSftp({
    ports: s.h.ports,
    host: '127.0.0.1',
    port: 0,
    hostKey: loadOrCreateHostKey(path.join(s.dir, 'data')),
    sources: nodeSourceReader({ roots: [s.sources, s.uploads], hosts: [] }),
    uploads: nodeUploadStore(s.uploads),
    serverName: 'test',
    ...options,
  });
  const keys = path.join(s.dir, 'keys');
  fs.mkdirSync(keys);
  return {
    ...s,
    sftp,
    /** A new ed25519 key pair; answers the private key's file and the public line. */
    keyPair(name: string) {
      const file = path.join(keys, name);
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `${name}@test`, '-f', file]);
      return { file, line: fs.readFileSync(`${file}.pub`, 'utf8').trim(), privateKey: fs.readFileSync(file, 'utf8') };
    },
    addKey: (user: string, line: string) => addKey(s.h.ports, 'test', user, line),
    /** OpenSSH's options for this server: its port, no host key checking, only the key given. */
    sshOptions(keyFile: string) {
      return [
        '-P',
        String(sftp.port),
        '-i',
        keyFile,
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'BatchMode=yes',
        '-o',
        'IdentitiesOnly=yes',
        '-o',
        'LogLevel=ERROR',
      ];
    },
    async close() {
      await sftp.close();
      await s.close();
    },
  };
}
export type SftpScene = Awaited<ReturnType<typeof sftpScene>>;

/** An ssh2 client logged in (password or key), with its SFTP channel. */
export function connect(port: number, login: { username: string; password?: string; privateKey?: string }) {
  return new Promise<{ client: Client; sftp: import('ssh2').SFTPWrapper }>((resolve, reject) => {
    const client = new Client();
    client
      .on('ready', () =>
        client.sftp((error, sftp) => {
          if (error) reject(error);
          else resolve({ client, sftp });
        }),
      )
      .on('error', reject)
      .connect({ host: '127.0.0.1', port, ...login, readyTimeout: 20_000 });
  });
}

/** Whether a login is accepted (the connection then closed). */
export async function logsIn(port: number, login: { username: string; password?: string; privateKey?: string }) {
  try {
    const { client } = await connect(port, login);
    client.end();
    return true;
  } catch {
    return false;
  }
}

/** An ssh2 SFTP call as a promise. */
export function call<T>(run: (done: (error: Error | null | undefined, value?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => run((error, value) => (error ? reject(error) : resolve(value as T))));
}

/** rclone's environment for a remote named `portal` on the portal's SFTP server, logged in with a key file. */
export function rcloneSftpEnv(port: number, user: string, keyFile: string) {
  return {
    RCLONE_CONFIG_PORTAL_TYPE: 'sftp',
    RCLONE_CONFIG_PORTAL_HOST: '127.0.0.1',
    RCLONE_CONFIG_PORTAL_PORT: String(port),
    RCLONE_CONFIG_PORTAL_USER: user,
    RCLONE_CONFIG_PORTAL_KEY_FILE: keyFile,
    RCLONE_CONFIG_PORTAL_SHELL_TYPE: 'none',
    RCLONE_CONFIG_PORTAL_DISABLE_HASHCHECK: 'true',
    RCLONE_CONFIG: '/dev/null',
  };
}
