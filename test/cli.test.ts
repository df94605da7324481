import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runMain } from './support/in-process.ts';
import {
  basic,
  type CliResult,
  freePort,
  killAll,
  removeTempDirs,
  request,
  runCli,
  startServer,
  tempDir,
} from './support/processes.ts';

// `ecpds-edge client ...` on an embedded database in a temp dir: the commands run through
// main() in this process; a few smoke tests at the end start the real binary.

vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

let env: Record<string, string>;
const cli = (...args: string[]) => runMain(args, { env });
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

  it('migrate prepares an empty data directory', async () => {
    const r = await cli('migrate');
    expect(r.status, fail(r)).toBe(0);
    expect(r.stdout).toBe('Database migrated.\n');
  });

  it('create prints the generated secret once', async () => {
    const r = await cli('client', 'create', 'alice', '--permission', 'incomingUser.*', '--permission', 'webUserList');
    expect(r.status, fail(r)).toBe(0);
    secret = secretOf(r);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(r.stdout).toContain("Client 'alice' created");
    expect(r.stdout.split(secret)).toHaveLength(2);
    expect(r.stderr).not.toContain(secret);
  });

  it('refuses to create the same username twice', async () => {
    const r = await cli('client', 'create', 'alice');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('ecpds-edge: Client alice already exists');
  });

  it('list and show print JSON without the secret or its hash', async () => {
    const list = await cli('client', 'list');
    expect(list.status, fail(list)).toBe(0);
    const clients = JSON.parse(list.stdout);
    expect(clients).toEqual([
      expect.objectContaining({ username: 'alice', permissions: ['incomingUser.*', 'webUserList'], origin: 'cli' }),
    ]);
    const show = await cli('client', 'show', 'alice');
    expect(show.status, fail(show)).toBe(0);
    const one = JSON.parse(show.stdout);
    expect(one).toEqual({
      username: 'alice',
      permissions: ['incomingUser.*', 'webUserList'],
      origin: 'cli',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      lastUsedAt: null,
    });
    for (const out of [list.stdout, show.stdout]) {
      expect(out).not.toContain(secret);
      expect(out).not.toMatch(/sha256\$|secretHash/);
    }
  });

  it('update replaces the permission list', async () => {
    const r = await cli(
      'client',
      'update',
      'alice',
      '--permission',
      'destinationList',
      '--permission',
      'incomingUserList',
    );
    expect(r.status, fail(r)).toBe(0);
    expect(JSON.parse(r.stdout).permissions).toEqual(['destinationList', 'incomingUserList']);
    expect(JSON.parse((await cli('client', 'show', 'alice')).stdout).permissions).toEqual([
      'destinationList',
      'incomingUserList',
    ]);
  });

  it('refuses an expression that does not compile, with a clear message, and changes nothing', async () => {
    const update = await cli('client', 'update', 'alice', '--permission', 'incoming(');
    expect(update.status).not.toBe(0);
    expect(update.stderr).toBe('ecpds-edge: Invalid permission expression: incoming(\n');
    expect(JSON.parse((await cli('client', 'show', 'alice')).stdout).permissions).toEqual([
      'destinationList',
      'incomingUserList',
    ]);

    const create = await cli('client', 'create', 'bob', '--permission', '[a-');
    expect(create.status).not.toBe(0);
    expect(create.stderr).toBe('ecpds-edge: Invalid permission expression: [a-\n');
    expect(create.stdout).toBe('');
    expect(JSON.parse((await cli('client', 'list')).stdout).map((c: { username: string }) => c.username)).toEqual([
      'alice',
    ]);
  });

  it('update needs at least one --permission; commands need a username', async () => {
    const none = await cli('client', 'update', 'alice');
    expect(none.status).not.toBe(0);
    expect(none.stderr).toContain('client update needs at least one --permission');
    const noName = await cli('client', 'show');
    expect(noName.status).not.toBe(0);
    expect(noName.stderr).toContain('client show needs a <username>');
  });

  it('checks the command before it opens the database', async () => {
    // A database that cannot be reached: the usage error must come first, at once.
    const unreachable = {
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      ECPDS_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
    };
    for (const [args, message] of [
      [['client', 'update', 'alice'], 'client update needs at least one --permission'],
      [['client', 'delete'], 'client delete needs a <username>'],
      [['client', 'rename', 'alice'], "unknown client command 'rename'"],
      [['client'], "unknown client command ''"],
    ] as const) {
      const r = await runMain([...args], { env: unreachable });
      expect(r.status, fail(r)).not.toBe(0);
      expect(r.stderr).toContain(message);
      expect(r.stderr).not.toMatch(/ECONNREFUSED|connect/i);
    }
  });

  it('refuses an invalid username', async () => {
    const r = await cli('client', 'create', 'has space');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/^ecpds-edge: Invalid client username: has space/);
  });

  it('reset-secret prints a new secret; the server accepts it and refuses the old one', async () => {
    const r = await cli('client', 'reset-secret', 'alice');
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
        const held = await cli(...args);
        expect(held.status, args.join(' ')).not.toBe(0);
        expect(held.stderr).toMatch(
          new RegExp(
            '^ecpds-edge: the embedded database in .*data is in use by a running server ' +
              `\\(pid ${server.child.pid}\\); stop it first`,
          ),
        );
      }
    } finally {
      expect(await server.stop()).toBe(true);
    }
    expect(JSON.parse((await cli('client', 'list')).stdout).map((c: { username: string }) => c.username)).toEqual([
      'alice',
    ]);
  });

  it('reset-secret, show, update and delete of an unknown client fail with its name', async () => {
    for (const args of [
      ['reset-secret', 'ghost'],
      ['show', 'ghost'],
      ['update', 'ghost', '--permission', '.*'],
      ['delete', 'ghost'],
    ]) {
      const r = await cli('client', ...args);
      expect(r.status, args.join(' ')).not.toBe(0);
      expect(r.stderr).toBe('ecpds-edge: Client ghost not found\n');
    }
  });

  it('delete removes the client', async () => {
    const r = await cli('client', 'delete', 'alice');
    expect(r.status, fail(r)).toBe(0);
    expect(r.stdout).toBe("Client 'alice' deleted.\n");
    expect(JSON.parse((await cli('client', 'list')).stdout)).toEqual([]);
    const again = await cli('client', 'show', 'alice');
    expect(again.status).not.toBe(0);
  });

  it('an unknown sub-command prints the usage and exits non-zero', async () => {
    const r = await cli('client', 'frobnicate');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("unknown client command 'frobnicate'");
    expect(r.stderr).toContain('ecpds-edge client create <username>');
  });
});

describe('help', () => {
  it('lists every command, and each group its sub-commands with their usage', async () => {
    const top = await runMain(['--help'], { env: {} });
    expect(top.status, fail(top)).toBe(0);
    expect(top.stderr).toBe('');
    for (const command of ['serve', 'migrate', 'client', 'webuser', 'fields', 'notes', 'monitoring', 'sweep']) {
      expect(top.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    }
    expect(top.stdout).toMatch(/^ {2}put --destination <name> <files>\.\.\. +register files/m);
    expect((await runMain([], { env: {} })).stdout).toBe(top.stdout);

    const client = await runMain(['client', '--help'], { env: {} });
    expect(client.status, fail(client)).toBe(0);
    expect(client.stdout).toContain('Usage: ecpds-edge client <command> [options]');
    expect(client.stdout).toMatch(/^ {2}create <username> \[--permission <regex>\]\.\.\. +create a client/m);
    expect(client.stdout).toMatch(/^ {2}update <username> --permission <regex>\.\.\. +replace the permission list/m);

    const put = await runMain(['help', 'put'], { env: {} });
    expect(put.status, fail(put)).toBe(0);
    expect(put.stdout).toMatch(/^ {2}--concurrency <n> +requests at a time/m);
    expect(put.stdout).toMatch(/^Connection options:\n {2}--url <url>/m);
  });

  it('prints the version, and refuses an unknown command or option with exit code 1', async () => {
    const version = await runMain(['--version'], { env: {} });
    expect(version).toEqual({ status: 0, stdout: expect.stringMatching(/^\d+\.\d+\.\d+\S*\n$/), stderr: '' });
    expect((await runMain(['version'], { env: {} })).stdout).toBe(version.stdout);
    expect(await runMain(['frobnicate'], { env: {} })).toEqual({
      status: 1,
      stdout: '',
      stderr: "ecpds-edge: unknown command 'frobnicate' (see `ecpds-edge --help`)\n",
    });
    expect(await runMain(['client', 'list', '--frob'], { env: {} })).toEqual({
      status: 1,
      stdout: '',
      stderr: "ecpds-edge: unknown option '--frob'\n",
    });
  });
});

describe('the real binary', () => {
  it('--help runs the compiled build', () => {
    const r = runCli(['--help'], {});
    expect(r.status, fail(r)).toBe(0);
    expect(r.stdout).toMatch(/^Usage: ecpds-edge <command> \[options\]\n/);
    expect(r.stdout).toContain('client <command>');
  });

  it('client create and client list on the data dir the tests above left with no client', () => {
    const created = runCli(['client', 'create', 'smoke', '--permission', 'destinationList'], env);
    expect(created.status, fail(created)).toBe(0);
    expect(created.stdout).toMatch(/^Client 'smoke' created\. Its secret is shown this once:\n[A-Za-z0-9_-]{43}\n$/);
    const list = runCli(['client', 'list'], env);
    expect(list.status, fail(list)).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([
      expect.objectContaining({ username: 'smoke', permissions: ['destinationList'] }),
    ]);
  });
});
