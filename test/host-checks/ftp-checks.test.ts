import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HostChecker, startHostChecker } from '../../functions/node/host-checks.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { type Proftpd, proftpdAvailability, startProftpd } from '../support/servers/proftpd.ts';
import { scaled } from '../support/time.ts';
import { checkedHost, resultOf } from './support.ts';

/** Host checks against ProFTPD with the ftp method: a working host, and a refused login. */
const availability = proftpdAvailability();
const WRONG = 'wrong-Ftp-Pass-5521';
let h: Harness;
let server: Proftpd;
let api: string;
let checker: HostChecker;

beforeAll(async () => {
  if (!availability.run) return;
  h = await createHarness();
  server = await startProftpd();
  api = await h.client('api-admin', ['.*']);
  checker = startHostChecker(h.ports, { concurrency: 2, pollMs: 50, timeoutMs: scaled(5_000), fileRoots: [] });
}, scaled(60_000));
afterAll(async () => {
  await checker?.stop();
  await server?.stop();
  await h?.close();
});

const ftpHost = (over: Record<string, unknown> = {}) => ({
  method: 'ftp' as const,
  host: `127.0.0.1:${server.port}`,
  login: server.user,
  passwd: server.password,
  checkFrequency: 3_600_000,
  ...over,
});

describe.skipIf(!availability.run)(`host checks over ftp ${availability.reason}`, () => {
  it('a working host: logged in, the check file written then removed', async () => {
    server.plant('checks/keep.txt', 'kept');
    const hostId = await checkedHost(h, api, 'HC_FTP_UP', ftpHost({ dir: 'checks', checkFilename: 'ecpds.tst' }));
    const c = await resultOf(h, 'HC_FTP_UP', hostId);
    expect(c.latest).toMatchObject({
      ok: true,
      message: 'Connected, logged in, wrote checks/ecpds.tst (18 bytes) and removed it',
    });
    expect(fs.readdirSync(path.join(server.root, 'checks'))).toEqual(['keep.txt']);
  });

  it('a refused login fails the check, and its message never holds the password', async () => {
    const hostId = await checkedHost(h, api, 'HC_FTP_AUTH', ftpHost({ passwd: WRONG, checkFilename: 'ecpds.tst' }));
    const c = await resultOf(h, 'HC_FTP_AUTH', hostId);
    expect(c.latest.ok).toBe(false);
    expect(c.latest.message).toMatch(/^Host check failed: Login failed for /);
    expect(c.latest.message).not.toContain(WRONG);
    expect(h.logLines.join('\n')).not.toContain(WRONG);
  });
});
