import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { freePort, killAll, removeTempDirs, startServer, tempDir } from '../../support/processes.ts';
import { scaled } from '../../support/time.ts';
import { needs } from '../../support/tools.ts';
import { incomingUser } from '../support.ts';
import { connect, logsIn, type SftpScene, sftpScene } from './support.ts';

/**
 * The portal's SFTP server as `ecpds-edge serve` runs it (its port, its host key kept in the data
 * directory and printed, a graceful stop), and its time limits.
 */
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });
afterAll(async () => {
  await killAll();
  removeTempDirs();
});

/** The host key's fingerprint as OpenSSH's client would see it: ssh-keyscan, then ssh-keygen -l. */
function scannedFingerprint(port: number) {
  const keys = execFileSync('ssh-keyscan', ['-p', String(port), '-t', 'ed25519', '127.0.0.1'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', '-'], { input: keys, encoding: 'utf8' }).split(' ')[1];
}

describe('ecpds-edge serve', () => {
  it(
    'listens on ECPDS_PORTAL_SFTP_PORT with a host key made on the first start, kept and printed',
    needs('ssh-keyscan', 'ssh-keygen'),
    async () => {
      const dataDir = path.join(tempDir('ecpds-portal-sftp-serve-'), 'data');
      const port = await freePort();
      const start = async () => {
        const server = startServer({
          PORT: String(await freePort()),
          ECPDS_DATA_DIR: dataDir,
          ECPDS_PORTAL_SFTP_PORT: String(port),
        });
        await server.ready;
        await vi.waitFor(() => expect(server.output()).toMatch(/host key SHA256:/), { timeout: scaled(10_000) });
        return server;
      };
      const first = await start();
      const printed = /Data portal SFTP on 127\.0\.0\.1:(\d+), host key (SHA256:\S+)/.exec(first.output());
      expect(printed?.[1]).toBe(String(port));
      expect(scannedFingerprint(port)).toBe(printed![2]);
      expect(fs.statSync(path.join(dataDir, 'portal-sftp', 'host_ed25519')).mode & 0o777).toBe(0o600);
      expect(await first.stop(15_000)).toBe(true);
      expect(await first.exited).toBe(0);

      const second = await start();
      expect(second.output()).toContain(`host key ${printed![2]}`);
      expect(await second.stop(15_000)).toBe(true);
    },
  );

  it('refuses to start on an SFTP port in use, naming the variable', async () => {
    const busy = net.createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => busy.once('listening', resolve));
    const port = (busy.address() as net.AddressInfo).port;
    const server = startServer({
      PORT: String(await freePort()),
      ECPDS_DATA_DIR: path.join(tempDir('ecpds-portal-sftp-busy-'), 'data'),
      ECPDS_PORTAL_SFTP_PORT: String(port),
    });
    expect(await server.exited).not.toBe(0);
    expect(server.output()).toMatch(/ECPDS_PORTAL_SFTP_PORT/);
    busy.close();
  });
});

describe('time limits', () => {
  let s: SftpScene;
  afterAll(() => s?.close());

  it('closes a connection that does not log in in time, and a session left idle', async () => {
    s = await sftpScene({ loginTimeoutMs: 500, idleTimeoutMs: 800 });
    await s.h.addDestination('DEST');
    await incomingUser(s.h, s.admin, { id: 'alice', password: 'Secret-1' }, ['DEST']);
    // A client that opens a connection and sends nothing is closed by the server.
    const silent = net.connect(s.sftp.port, '127.0.0.1').resume();
    await new Promise<void>((resolve) => silent.once('close', () => resolve()));

    expect(await logsIn(s.sftp.port, { username: 'alice', password: 'Secret-1' })).toBe(true);
    const { client } = await connect(s.sftp.port, { username: 'alice', password: 'Secret-1' });
    await new Promise<void>((resolve) => client.once('close', () => resolve()));
  });
});
