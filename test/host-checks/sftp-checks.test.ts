import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapWebAdmin } from '../../core/console/sign-in.ts';
import { type HostChecker, startHostChecker } from '../../functions/node/host-checks.ts';
import { FormAgent } from '../support/form-agent.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { freePort } from '../support/processes.ts';
import { type Sshd, sshdMissing, startSshd } from '../support/servers/sshd.ts';
import { scaled } from '../support/time.ts';
import { checkedHost, resultOf, text } from './support.ts';

/**
 * Host checks against OpenSSH, through the server's checker on a real database: a host that works, one
 * that refuses the login, one that is down then back up, one that never answers; their results in the
 * console and in /metrics.
 */
const noSshd = sshdMissing();
const TIMEOUT_MS = scaled(3_000);
const WRONG = 'wrong-Pass-7391';
let h: Harness;
let sshd: Sshd;
let api: string;
let checker: HostChecker;
const servers: net.Server[] = [];

beforeAll(async () => {
  if (noSshd) return;
  h = await createHarness({ metricsPublic: true });
  sshd = await startSshd({ logFiles: true });
  api = await h.client('api-admin', ['.*']);
  checker = startHostChecker(h.ports, { concurrency: 4, pollMs: 50, timeoutMs: TIMEOUT_MS, fileRoots: [] });
}, scaled(60_000));
afterAll(async () => {
  await checker?.stop();
  for (const s of servers) s.close();
  await sshd?.stop();
  await h?.close();
});

const sftpHost = (over: Record<string, unknown> = {}) => ({
  method: 'sftp' as const,
  host: `127.0.0.1:${sshd.port}`,
  login: sshd.user,
  passwd: sshd.password,
  checkFrequency: 3_600_000,
  ...over,
});

/** A TCP server on `port` that hands each connection to sshd: the host "back up". */
function forwarder(port: number) {
  const server = net.createServer((socket) => {
    const upstream = net.connect(sshd.port, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    const close = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', close);
    upstream.on('error', close);
  });
  servers.push(server);
  return new Promise<net.Server>((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

describe.skipIf(noSshd !== null)(`host checks over sftp ${noSshd ?? ''}`, () => {
  it('a working host: logged in, the check file written then removed, the result kept', async () => {
    const dir = sshd.scratch('check-up-');
    const hostId = await checkedHost(h, api, 'HC_UP', sftpHost({ dir, checkFilename: 'ecpds.tst' }));
    const c = await resultOf(h, 'HC_UP', hostId);
    expect(c.latest).toMatchObject({
      ok: true,
      message: `Connected, logged in, wrote ${dir}/ecpds.tst (18 bytes) and removed it`,
    });
    expect(c.latest.durationMs).toBeLessThan(TIMEOUT_MS);
    expect(fs.existsSync(path.join(dir, 'ecpds.tst'))).toBe(false);
    // What the server saw: the file opened for writing, written, closed, then removed, on one session.
    const ops = sshd.fileOperations().filter((o) => o.path === `${dir}/ecpds.tst`);
    expect(ops.map((o) => o.kind)).toEqual(['open', 'close', 'remove']);
    expect(ops[0]!.detail).toContain('WRITE');
    expect(new Set(ops.map((o) => o.session)).size).toBe(1);
  });

  it('without a check file, only the login is checked', async () => {
    const hostId = await checkedHost(h, api, 'HC_LOGIN', sftpHost());
    const c = await resultOf(h, 'HC_LOGIN', hostId);
    expect(c.latest).toMatchObject({ ok: true, message: 'Connected and logged in' });
  });

  it('a refused login fails the check, and its message never holds the password', async () => {
    const hostId = await checkedHost(h, api, 'HC_AUTH', sftpHost({ passwd: WRONG, checkFilename: 'ecpds.tst' }));
    const c = await resultOf(h, 'HC_AUTH', hostId);
    expect(c.latest.ok).toBe(false);
    expect(c.latest.message).toMatch(/^Host check failed: .*authentication/i);
    expect(c.latest.message).not.toContain(WRONG);
    expect(h.logLines.join('\n')).not.toContain(WRONG);
  });

  it('a host down fails at once; back up, its next check works', async () => {
    const port = await freePort();
    const hostId = await checkedHost(h, api, 'HC_DOWN', sftpHost({ host: `127.0.0.1:${port}`, checkFrequency: 300 }));
    const down = await resultOf(h, 'HC_DOWN', hostId);
    expect(down.latest.ok).toBe(false);
    expect(down.latest.message).toMatch(/ECONNREFUSED|refused/i);
    expect(down.latest.durationMs).toBeLessThan(TIMEOUT_MS);
    const server = await forwarder(port);
    const up = await resultOf(h, 'HC_DOWN', hostId, (c) => c.latest!.ok);
    expect(up.latest.message).toBe('Connected and logged in');
    // The failures before it are kept, newest first.
    expect(up.history[0]?.ok).toBe(false);
    server.close();
  });

  it('a host that never answers is cut at the timeout', async () => {
    const silent = net.createServer(() => undefined);
    servers.push(silent);
    const port = await freePort();
    await new Promise<void>((resolve) => silent.listen(port, '127.0.0.1', () => resolve()));
    const hostId = await checkedHost(h, api, 'HC_SILENT', sftpHost({ host: `127.0.0.1:${port}` }));
    const c = await resultOf(h, 'HC_SILENT', hostId);
    expect(c.latest.ok).toBe(false);
    expect(c.latest.message).toMatch(/timed out|timeout/i);
    // Bounded by the check's timeout (or the method's own, shorter, connect timeout), with a margin for the machine.
    expect(c.latest.durationMs).toBeLessThan(TIMEOUT_MS + scaled(1_000));
  });

  it('/metrics has one series per host and destination: up, when, how long', async () => {
    const r = await h.call('GET', '/metrics', { auth: null });
    expect(r.status).toBe(200);
    const up = (await resultOf(h, 'HC_UP', await idOf('HC_UP'))).hostId;
    const refused = await idOf('HC_AUTH');
    expect(r.text).toContain('# TYPE ecpds_host_check_up gauge');
    expect(r.text).toContain(`ecpds_host_check_up{host="${up}",destination="HC_UP"} 1`);
    expect(r.text).toContain(`ecpds_host_check_up{host="${refused}",destination="HC_AUTH"} 0`);
    expect(r.text).toMatch(
      new RegExp(`ecpds_host_check_timestamp_seconds\\{host="${up}",destination="HC_UP"\\} \\d{10}\\n`),
    );
    expect(r.text).toMatch(
      new RegExp(`ecpds_host_check_duration_seconds\\{host="${up}",destination="HC_UP"\\} [0-9.]+\\n`),
    );
  });

  it("the console's destination page shows each checked host's latest check", async () => {
    const password = (await bootstrapWebAdmin(h.ports))!;
    const operator = new FormAgent(h.app, '192.0.2.77');
    const login = await operator.request('GET', '/console/login');
    const r = await operator.request('POST', '/console/login', { csrf: login.csrf!, username: 'admin', password });
    expect(r.status).toBe(303);
    const ok = text((await operator.get('/console/monitor/destinations/HC_UP')).text);
    expect(ok).toContain('Host checks Host Every Latest check Duration Next check');
    expect(ok).toMatch(
      /hc_up-0 \(127\.0\.0\.1:\d+\) sftp 60 min writes ecpds\.tst OK \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/,
    );
    expect(ok).toContain('wrote');
    const failed = (await operator.get('/console/monitor/destinations/HC_AUTH')).text;
    expect(text(failed)).toMatch(/Failed \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC Host check failed: /);
    expect(failed).not.toContain(WRONG);
  });
});

async function idOf(destination: string) {
  const [c] = await h.ports.repos.hostChecks.ofDestination(destination);
  return c!.hostId;
}
