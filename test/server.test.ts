import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { VERSION } from '../core/system/version.ts';
import { onPostgres } from './support/database.ts';
import {
  basic,
  freePort,
  killAll,
  removeTempDirs,
  request,
  runCli,
  type ServerProcess,
  startServer,
  tempDir,
} from './support/processes.ts';

// `ecpds-edge serve` as operators run it: a child process on a free port, spoken to over HTTPS.
// The embedded-database servers do not read TEST_DATABASE_URL, so only the PGlite pass runs them.

const CLIENT = { username: 'edgeclient', password: 'Pr0ps-s3cret-42' };
// The password ends at the first colon, so the expression may hold colons: `(?:...)`.
const PROPERTIES = [
  '# provisioning of the reference server',
  '[Other]',
  'ignored=line:.*',
  '[API]',
  `${CLIENT.username}=${CLIENT.password}:(?:incoming.*)|destinationList`, // line 5
  'this line has no equals sign', // line 6
  'badregex=Another-pass-1:incoming(', // line 7
  '',
].join('\n');
const PASSWORD = CLIENT.password;

// Every test starts at least one process (first starts generate a TLS key): wait generously.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

afterAll(async () => {
  await killAll();
  removeTempDirs();
});

const waitReady = async (s: ServerProcess) => {
  try {
    return await s.ready;
  } catch (e) {
    throw new Error(`server did not start: ${e instanceof Error ? e.message : String(e)}`);
  }
};

describe.skipIf(onPostgres())('embedded server (PGlite)', () => {
  let dataDir: string;
  let propsFile: string;
  let server: ServerProcess;
  let url: string;
  const auth = basic(CLIENT.username, PASSWORD);

  beforeAll(async () => {
    const dir = tempDir();
    dataDir = path.join(dir, 'data');
    propsFile = path.join(dir, 'ecpds.properties');
    fs.writeFileSync(propsFile, PROPERTIES);
    server = startServer({ PORT: String(await freePort()), ECPDS_DATA_DIR: dataDir, ECPDS_PROPERTIES: propsFile });
    url = await waitReady(server);
  });

  it('starts over HTTPS on the given host and port, with the embedded database migrated', () => {
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const listening = server.logs().find((l) => l.msg === 'listening')!;
    expect(listening).toMatchObject({ level: 'info', version: VERSION, database: 'pglite', trustProxy: false });
    expect(fs.existsSync(path.join(dataDir, 'pgdata'))).toBe(true);
    expect(fs.existsSync(path.join(dataDir, 'tls', 'cert.pem'))).toBe(true);
  });

  it('keeps secret.key readable by its owner only', () => {
    expect(fs.statSync(path.join(dataDir, 'secret.key')).mode & 0o777).toBe(0o600);
  });

  it('answers GET /v1/version over HTTPS', async () => {
    const r = await request(url, 'GET', '/v1/version');
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'ok', version: VERSION });
  });

  it('serves the API under the default base path /ecpds too', async () => {
    const r = await request(url, 'GET', '/ecpds/v1/incoming/user/list', { authorization: auth });
    expect(r.json).toMatchObject({ status: 'ok', userList: [] });
    expect((await request(url, 'GET', '/ecpds/openapi.json')).json.servers[0].url).toBe('/ecpds');
  });

  it('accepts the client of the properties file and refuses a wrong secret', async () => {
    const ok = await request(url, 'GET', '/v1/incoming/user/list', { authorization: auth });
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ status: 'ok', userList: [] });
    // Twice in a row (the second call is answered from the verification cache).
    expect((await request(url, 'GET', '/v1/incoming/user/list', { authorization: auth })).status).toBe(200);
    const wrong = await request(url, 'GET', '/v1/incoming/user/list', {
      authorization: basic(CLIENT.username, `${PASSWORD}x`),
    });
    expect(wrong.status).toBe(500);
    expect(wrong.json).toEqual({ status: 'error', message: 'User not authorized' });
    // Its expression is enforced: webUserList is not granted.
    expect((await request(url, 'GET', '/v1/web/user/list', { authorization: auth })).json.message).toBe(
      'User not authorized',
    );
  });

  it('logs and skips a malformed line and an expression that does not compile', async () => {
    const skipped = server.logs().filter((l) => l.msg === 'properties entry skipped');
    expect(skipped.map((l) => [l.level, l.line])).toEqual([
      ['warn', 6],
      ['warn', 7],
    ]);
    expect(skipped[1]!.reason).toMatch(/Invalid permission expression: incoming\(/);
    const bad = await request(url, 'GET', '/v1/incoming/user/list', {
      authorization: basic('badregex', 'Another-pass-1'),
    });
    expect(bad.json).toEqual({ status: 'error', message: 'User not authorized' });
  });

  it('warns that plaintext provisioning is deprecated, without the password', () => {
    const warning = server.logs().find((l) => l.level === 'warn' && /deprecated/.test(l.msg));
    expect(warning).toMatchObject({ username: CLIENT.username, line: 5 });
  });

  it('does not create the bootstrap admin when a properties file is given', async () => {
    expect(server.output()).not.toContain("Bootstrap API client 'admin'");
  });

  it('never logs a client secret or an Authorization value', async () => {
    await request(url, 'GET', '/v1/incoming/user/list', { authorization: auth, 'x-request-id': 'secret-check' });
    // Log lines are written once per turn of the server's event loop, just after the answer.
    for (let i = 0; i < 100 && !server.output().includes('"requestId":"secret-check"'); i++)
      await new Promise((r) => setTimeout(r, 20));
    const log = server.output();
    expect(log).toContain('"requestId":"secret-check"');
    expect(log).not.toContain(PASSWORD);
    expect(log).not.toContain('Another-pass-1');
    expect(log).not.toContain(auth.slice('Basic '.length));
  });

  it('refuses a second server on the same data directory', async () => {
    const second = startServer({
      PORT: String(await freePort()),
      ECPDS_DATA_DIR: dataDir,
      ECPDS_PROPERTIES: propsFile,
    });
    expect(await second.exited).not.toBe(0);
    expect(second.output()).toMatch(/embedded database in .* is in use by a running server \(pid \d+\)/);
    // The first one still holds and serves it.
    expect((await request(url, 'GET', '/v1/incoming/user/list', { authorization: auth })).status).toBe(200);
  });

  it('stops on SIGTERM within 10 s, and a restart keeps the data written before', async () => {
    const add = await request(url, 'POST', '/v1/incoming/user/add2?id=x&email=x%40example.org&iso=gb', {
      authorization: auth,
    });
    expect(add.status, add.text).toBe(200);
    expect(await server.stop(10_000)).toBe(true);
    expect(await server.exited).toBe(0);
    expect(server.logs().map((l) => l.msg)).toContain('stopped');
    expect(fs.existsSync(path.join(dataDir, 'server.lock'))).toBe(false);

    // The properties file now gives the client another password: existing clients are never overwritten.
    fs.writeFileSync(propsFile, `[API]\n${CLIENT.username}=Changed-pass-9:.*\n`);
    server = startServer({ PORT: String(await freePort()), ECPDS_DATA_DIR: dataDir }, ['--properties', propsFile]);
    url = await waitReady(server);
    const list = await request(url, 'GET', '/v1/incoming/user/list', { authorization: auth });
    expect(list.status).toBe(200);
    expect(list.json.userList).toEqual([
      expect.objectContaining({ id: 'x', email: 'x@example.org', iso: 'gb', active: true }),
    ]);
    expect(
      (await request(url, 'GET', '/v1/incoming/user/list', { authorization: basic(CLIENT.username, 'Changed-pass-9') }))
        .status,
    ).toBe(500);
    expect(server.logs().some((l) => /deprecated/.test(l.msg))).toBe(false);
    expect(await server.stop(10_000)).toBe(true);
  });
});

describe.skipIf(onPostgres())('bootstrap admin', () => {
  it('is created on an empty client store with no properties file; its secret is printed once and works', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const server = startServer({ PORT: String(await freePort()), ECPDS_DATA_DIR: dataDir });
    const url = await waitReady(server);
    const out = server.output();
    const secret = /Bootstrap API client 'admin' created[^\n]*\n\s*\n\s*(\S+)\n/.exec(out)?.[1];
    expect(secret).toBeTruthy();
    expect(out).toContain(`curl -k -u admin:${secret} ${url}/v1/incoming/user/list`);
    // Shown on stdout for the operator, never inside a JSON log line.
    expect(server.logs().some((l) => JSON.stringify(l).includes(secret!))).toBe(false);
    const r = await request(url, 'GET', '/v1/incoming/user/list', { authorization: basic('admin', secret!) });
    expect(r.status).toBe(200);
    expect(
      (await request(url, 'GET', '/v1/incoming/user/list', { authorization: basic('admin', 'nope') })).status,
    ).toBe(500);
    expect(await server.stop()).toBe(true);

    // A restart does not create another one.
    const again = startServer({ PORT: String(await freePort()), ECPDS_DATA_DIR: dataDir });
    await waitReady(again);
    expect(again.output()).not.toContain('Bootstrap API client');
    expect(await again.stop()).toBe(true);
  });
});

describe.skipIf(onPostgres())('a port in use', () => {
  it('fails with a clear message, releases the data dir, and the next start still bootstraps the admin', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const port = await freePort();
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    try {
      const failed = startServer({ PORT: String(port), ECPDS_DATA_DIR: dataDir });
      expect(await failed.exited).toBe(1);
      expect(failed.output()).toContain(`ecpds-edge: cannot listen on 127.0.0.1:${port}: listen EADDRINUSE`);
      expect(failed.output()).not.toMatch(/\n\s+at /);
      expect(failed.output()).not.toContain('Bootstrap API client');
      expect(fs.existsSync(path.join(dataDir, 'server.lock'))).toBe(false);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
    const next = startServer({ PORT: String(await freePort()), ECPDS_DATA_DIR: dataDir });
    await waitReady(next);
    expect(next.output()).toContain("Bootstrap API client 'admin' created");
    expect(await next.stop()).toBe(true);
  });
});

describe.skipIf(onPostgres())('trust-proxy mode', () => {
  it('serves plain HTTP; a request is secure only with X-Forwarded-Proto: https', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const server = startServer({ PORT: String(await freePort()), ECPDS_DATA_DIR: dataDir, ECPDS_TRUST_PROXY: '1' });
    const url = await waitReady(server);
    expect(url).toMatch(/^http:\/\//);
    const ok = await request(url, 'GET', '/v1/version', { 'x-forwarded-proto': 'https' });
    expect(ok.status).toBe(200);
    expect(ok.json.version).toBe(VERSION);
    const plain = await request(url, 'GET', '/v1/version');
    expect(plain.status).toBe(403);
    expect(plain.text).toBe('Operation only available through a secure connection (https)');
    expect((await request(url, 'GET', '/v1/version', { 'x-forwarded-proto': 'http' })).status).toBe(403);
    expect(await server.stop()).toBe(true);
  });
});

describe.skipIf(onPostgres())('configuration errors', () => {
  it('refuses DATABASE_URL without ECPDS_SECRET_KEY with a clear message', () => {
    const r = runCli(['serve'], {
      PORT: '0',
      ECPDS_DATA_DIR: path.join(tempDir(), 'data'),
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/^ecpds-edge: ECPDS_SECRET_KEY is required with DATABASE_URL/m);
    expect(r.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
  });
});

describe.runIf(process.env.TEST_DATABASE_URL)('server on Postgres', () => {
  const adminUrl = process.env.TEST_DATABASE_URL!;
  const name = `ecpds_server_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  let admin: import('postgres').Sql;

  beforeAll(async () => {
    const { default: postgres } = await import('postgres');
    admin = postgres(adminUrl, { max: 1, onnotice: () => undefined });
    await admin.unsafe(`create database "${name}"`);
  });
  afterAll(async () => {
    await killAll();
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
  });

  it('starts, migrates, provisions and serves with DATABASE_URL and ECPDS_SECRET_KEY', async () => {
    const target = new URL(adminUrl);
    target.pathname = `/${name}`;
    const dir = tempDir();
    const props = path.join(dir, 'ecpds.properties');
    fs.writeFileSync(props, `[API]\npgclient=Pg-pass-123:.*\n`);
    const env = {
      PORT: String(await freePort()),
      ECPDS_DATA_DIR: path.join(dir, 'data'),
      DATABASE_URL: target.toString(),
      ECPDS_SECRET_KEY: randomBytes(32).toString('base64'),
      ECPDS_PROPERTIES: props,
    };
    const server = startServer(env);
    const url = await waitReady(server);
    expect(server.logs().find((l) => l.msg === 'listening')).toMatchObject({ database: 'postgres' });
    expect((await request(url, 'GET', '/v1/version')).status).toBe(200);
    const auth = basic('pgclient', 'Pg-pass-123');
    const add = await request(url, 'POST', '/v1/incoming/user/add2?id=pg&email=pg%40example.org&iso=gb', {
      authorization: auth,
    });
    expect(add.status, add.text).toBe(200);
    expect(await server.stop()).toBe(true);
    expect(await server.exited).toBe(0);
    // No embedded database and no lock with Postgres.
    expect(fs.existsSync(path.join(dir, 'data', 'pgdata'))).toBe(false);

    const again = startServer({ ...env, PORT: String(await freePort()) });
    const url2 = await waitReady(again);
    const list = await request(url2, 'GET', '/v1/incoming/user/list', { authorization: auth });
    expect(list.json.userList.map((u: { id: string }) => u.id)).toEqual(['pg']);
    expect(await again.stop()).toBe(true);
  });
});
