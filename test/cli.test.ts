import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  basic, freePort, killAll, removeTempDirs, request, runCli, startServer, tempDir, type CliResult,
} from './support/processes.ts';

// `ecpds-edge client ...` end to end through the bin, on an embedded database in a temp dir.

vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

let env: Record<string, string>;
const cli = (...args: string[]) => runCli(args, env);
const secretOf = (r: CliResult) => r.stdout.trim().split('\n').at(-1)!.trim();
const fail = (r: CliResult) => `exit ${r.status}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

beforeAll(() => {
  env = { ECPDS_DATA_DIR: path.join(tempDir(), 'data') };
});
afterAll(async () => {
  await killAll();
  removeTempDirs();
});

describe('ecpds-edge client', () => {
  let secret: string;

  it('migrate prepares an empty data directory', () => {
    const r = cli('migrate');
    expect(r.status, fail(r)).toBe(0);
    expect(r.stdout).toBe('Database migrated.\n');
  });

  it('create prints the generated secret once', () => {
    const r = cli('client', 'create', 'alice', '--permission', 'incomingUser.*', '--permission', 'webUserList');
    expect(r.status, fail(r)).toBe(0);
    secret = secretOf(r);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(r.stdout).toContain("Client 'alice' created");
    expect(r.stdout.split(secret)).toHaveLength(2);
    expect(r.stderr).not.toContain(secret);
  });

  it('refuses to create the same username twice', () => {
    const r = cli('client', 'create', 'alice');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('ecpds-edge: Client alice already exists');
  });

  it('list and show print JSON without the secret or its hash', () => {
    const list = cli('client', 'list');
    expect(list.status, fail(list)).toBe(0);
    const clients = JSON.parse(list.stdout);
    expect(clients).toEqual([expect.objectContaining({ username: 'alice', permissions: ['incomingUser.*', 'webUserList'], origin: 'cli' })]);
    const show = cli('client', 'show', 'alice');
    expect(show.status, fail(show)).toBe(0);
    const one = JSON.parse(show.stdout);
    expect(one).toEqual({
      username: 'alice', permissions: ['incomingUser.*', 'webUserList'], origin: 'cli',
      createdAt: expect.any(String), updatedAt: expect.any(String), lastUsedAt: null,
    });
    for (const out of [list.stdout, show.stdout]) {
      expect(out).not.toContain(secret);
      expect(out).not.toMatch(/sha256\$|secretHash/);
    }
  });

  it('update replaces the permission list', () => {
    const r = cli('client', 'update', 'alice', '--permission', 'destinationList', '--permission', 'incomingUserList');
    expect(r.status, fail(r)).toBe(0);
    expect(JSON.parse(r.stdout).permissions).toEqual(['destinationList', 'incomingUserList']);
    expect(JSON.parse(cli('client', 'show', 'alice').stdout).permissions).toEqual(['destinationList', 'incomingUserList']);
  });

  it('refuses an expression that does not compile, with a clear message, and changes nothing', () => {
    const update = cli('client', 'update', 'alice', '--permission', 'incoming(');
    expect(update.status).not.toBe(0);
    expect(update.stderr).toBe('ecpds-edge: Invalid permission expression: incoming(\n');
    expect(JSON.parse(cli('client', 'show', 'alice').stdout).permissions).toEqual(['destinationList', 'incomingUserList']);

    const create = cli('client', 'create', 'bob', '--permission', '[a-');
    expect(create.status).not.toBe(0);
    expect(create.stderr).toBe('ecpds-edge: Invalid permission expression: [a-\n');
    expect(create.stdout).toBe('');
    expect(JSON.parse(cli('client', 'list').stdout).map((c: { username: string }) => c.username)).toEqual(['alice']);
  });

  it('update needs at least one --permission; commands need a username', () => {
    const none = cli('client', 'update', 'alice');
    expect(none.status).not.toBe(0);
    expect(none.stderr).toContain('client update needs at least one --permission');
    const noName = cli('client', 'show');
    expect(noName.status).not.toBe(0);
    expect(noName.stderr).toContain('client show needs a <username>');
  });

  it('checks the command before it opens the database', () => {
    // A database that cannot be reached: the usage error must come first, at once.
    const unreachable = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', ECPDS_SECRET_KEY: Buffer.alloc(32, 7).toString('base64') };
    for (const [args, message] of [
      [['client', 'update', 'alice'], 'client update needs at least one --permission'],
      [['client', 'delete'], 'client delete needs a <username>'],
      [['client', 'rename', 'alice'], "unknown client command 'rename'"],
      [['client'], "unknown client command ''"],
    ] as const) {
      const r = runCli([...args], unreachable);
      expect(r.status, fail(r)).not.toBe(0);
      expect(r.stderr).toContain(message);
      expect(r.stderr).not.toMatch(/ECONNREFUSED|connect/i);
    }
  });

  it('refuses an invalid username', () => {
    const r = cli('client', 'create', 'has space');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/^ecpds-edge: Invalid client username: has space/);
  });

  it('reset-secret prints a new secret; the server accepts it and refuses the old one', async () => {
    const r = cli('client', 'reset-secret', 'alice');
    expect(r.status, fail(r)).toBe(0);
    const fresh = secretOf(r);
    expect(fresh).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(fresh).not.toBe(secret);

    const server = startServer({ ...env, PORT: String(await freePort()) });
    try {
      const url = await server.ready;
      const ok = await request(url, 'GET', '/v1/incoming/user/list', { authorization: basic('alice', fresh) });
      expect(ok.status, ok.text).toBe(200);
      const old = await request(url, 'GET', '/v1/incoming/user/list', { authorization: basic('alice', secret) });
      expect(old.json).toEqual({ status: 'error', message: 'User not authorized' });
      // The bootstrap admin is only for an empty client store.
      expect(server.output()).not.toContain('Bootstrap API client');

      // While the server holds the embedded database, commands say so and exit non-zero.
      for (const args of [['client', 'list'], ['client', 'create', 'carol'], ['migrate']]) {
        const held = cli(...args);
        expect(held.status, args.join(' ')).not.toBe(0);
        expect(held.stderr).toMatch(
          new RegExp(`^ecpds-edge: the embedded database in .*data is in use by a running server \\(pid ${server.child.pid}\\); stop it first`),
        );
      }
    } finally {
      expect(await server.stop()).toBe(true);
    }
    expect(JSON.parse(cli('client', 'list').stdout).map((c: { username: string }) => c.username)).toEqual(['alice']);
  });

  it('reset-secret, show, update and delete of an unknown client fail with its name', () => {
    for (const args of [['reset-secret', 'ghost'], ['show', 'ghost'], ['update', 'ghost', '--permission', '.*'], ['delete', 'ghost']]) {
      const r = cli('client', ...args);
      expect(r.status, args.join(' ')).not.toBe(0);
      expect(r.stderr).toBe('ecpds-edge: Client ghost not found\n');
    }
  });

  it('delete removes the client', () => {
    const r = cli('client', 'delete', 'alice');
    expect(r.status, fail(r)).toBe(0);
    expect(r.stdout).toBe("Client 'alice' deleted.\n");
    expect(JSON.parse(cli('client', 'list').stdout)).toEqual([]);
    const again = cli('client', 'show', 'alice');
    expect(again.status).not.toBe(0);
  });

  it('an unknown sub-command prints the usage and exits non-zero', () => {
    const r = cli('client', 'frobnicate');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("unknown client command 'frobnicate'");
    expect(r.stderr).toContain('ecpds-edge client create <username>');
  });
});
