import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { freePort, killAll, removeTempDirs, startServer, tempDir } from '../../support/processes.ts';
import { needs } from '../../support/tools.ts';
import { md5, tool } from '../support.ts';
import { s3cmdFor } from './support.ts';

/**
 * The portal's S3 listener as `ecpds-edge serve` runs it: on ECPDS_PORTAL_S3_PORT, next to HTTPS on
 * the same address and with its certificate, the endpoint at its root (what s3cmd needs), printed at
 * the start; /portal/s3 of the main port still served; 0 turns it off; a port in use stops the start.
 */
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });
afterAll(async () => {
  await killAll();
  removeTempDirs();
});

describe('ecpds-edge serve', () => {
  it(
    'serves S3 at the root of ECPDS_PORTAL_S3_PORT (s3cmd), and under /portal/s3 of the main port (curl)',
    needs('s3cmd', 'curl'),
    async () => {
      const dir = tempDir('ecpds-portal-s3-serve-');
      const s3Port = await freePort();
      // The demo data: its portal user and PORTAL_DEMO's welcome.txt, its password printed.
      const server = startServer({
        PORT: String(await freePort()),
        ECPDS_DATA_DIR: path.join(dir, 'data'),
        ECPDS_DEMO: '1',
        ECPDS_PORTAL_S3_PORT: String(s3Port),
      });
      const url = await server.ready;
      await vi.waitFor(() => expect(server.output()).toMatch(/Data portal user 'demo_reader' created/));
      expect(server.output()).toContain(`Data portal S3 on https://127.0.0.1:${s3Port}\n`);
      const password = /Data portal user 'demo_reader' created[^\n]*\n\n\s+(\S+)\n/.exec(server.output())![1]!;
      const welcome = path.join(dir, 'data', 'outgoing', 'demo', 'welcome.txt');

      const s3cmd = s3cmdFor(dir, `127.0.0.1:${s3Port}`, { accessKeyId: 'demo_reader', secretAccessKey: password });
      const listed = await s3cmd('ls', 's3://PORTAL_DEMO');
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout.toString()).toMatch(/\s132\s+s3:\/\/PORTAL_DEMO\/welcome\.txt\n$/);
      const got = await s3cmd('get', 's3://PORTAL_DEMO/welcome.txt', path.join(dir, 'got.txt'));
      expect(got.code, got.stderr).toBe(0);
      expect(md5(fs.readFileSync(path.join(dir, 'got.txt')))).toBe(md5(fs.readFileSync(welcome)));

      const curl = await tool('curl', [
        '-sSk',
        '--aws-sigv4',
        'aws:amz:us-east-1:s3',
        '--user',
        `demo_reader:${password}`,
        `${url}/portal/s3/PORTAL_DEMO/welcome.txt`,
      ]);
      expect(md5(curl.stdout)).toBe(md5(fs.readFileSync(welcome)));
      // The listener serves S3 only: the API is the main port's.
      const api = await tool('curl', [
        '-sk',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        `https://127.0.0.1:${s3Port}/healthz`,
      ]);
      expect(api.stdout.toString()).toBe('403');
      expect(await server.stop(15_000)).toBe(true);
      expect(await server.exited).toBe(0);
    },
  );

  it('opens no S3 listener with ECPDS_PORTAL_S3_PORT=0', async () => {
    const server = startServer({
      PORT: String(await freePort()),
      ECPDS_DATA_DIR: path.join(tempDir('ecpds-portal-s3-off-'), 'data'),
      ECPDS_PORTAL_S3_PORT: '0',
    });
    await server.ready;
    expect(server.output()).not.toContain('Data portal S3');
    expect(server.logs().some((l) => l.msg === 'portal s3 listening')).toBe(false);
    expect(await server.stop(15_000)).toBe(true);
  });

  it('refuses to start on an S3 port in use, naming the variable', async () => {
    const busy = net.createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => busy.once('listening', resolve));
    const port = (busy.address() as net.AddressInfo).port;
    const server = startServer({
      PORT: String(await freePort()),
      ECPDS_DATA_DIR: path.join(tempDir('ecpds-portal-s3-busy-'), 'data'),
      ECPDS_PORTAL_S3_PORT: String(port),
    });
    expect(await server.exited, server.output()).not.toBe(0);
    expect(server.output()).toMatch(
      /cannot start the portal's S3 listener on 127\.0\.0\.1:\d+ \(ECPDS_PORTAL_S3_PORT; 0/,
    );
    busy.close();
  });
});
