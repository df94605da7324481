import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { VERSION } from '../../core/system/version.ts';
import { destinations } from '../../db/schema.ts';
import { parseConfig } from '../../functions/node/config.ts';
import { openRuntime } from '../../functions/node/runtime.ts';
import { freshPostgres, onPostgres } from '../support/database.ts';
import { runMain } from '../support/in-process.ts';
import { freePort, killAll, removeTempDirs, type ServerProcess, startServer, tempDir } from '../support/processes.ts';
import { scaled } from '../support/time.ts';
import { needs } from '../support/tools.ts';

/**
 * `ecpds-edge incoming ...`, and the operators' destination, transfer and host commands, while
 * `ecpds-edge serve` runs. On the embedded database (which one process
 * holds) the command line hands the command to the server through `<data dir>/cli/socket`; the server
 * runs it as its own change. Its re-check interval here is ten minutes, so a live SFTP session that
 * sees a change at its next request sees it because the change was the server's own. On Postgres
 * (TEST_DATABASE_URL) the command line changes the database itself, as before.
 */
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

const dir = tempDir('ecpds-cli-serving-');
const dataDir = path.join(dir, 'data');
const work = path.join(dir, 'work');
let env: Record<string, string>;
let server: ServerProcess;
let sftpPort: number;
let dropDatabase = async () => {};
const key = path.join(dir, 'alice_ed25519');
let keyLine: string;
let fingerprint: string;

// main() in this process (the bin's dist/ is rebuilt under a spawned one by other test runs); the
// server is a real `ecpds-edge serve`.
const cli = (...args: string[]) => runMain(args, { env });
const embedded = !onPostgres();
// The command channel is the embedded database's (test options: the suite's would override runIf).
const onlyEmbedded = { skip: !embedded };

beforeAll(async () => {
  fs.mkdirSync(work);
  fs.writeFileSync(path.join(work, 'up.txt'), 'uploaded through a key added while the server ran\n');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'alice@laptop', '-f', key]);
  keyLine = fs.readFileSync(`${key}.pub`, 'utf8').trim();
  fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${key}.pub`], { encoding: 'utf8' }).split(
    ' ',
  )[1]!;
  env = { ECPDS_DATA_DIR: dataDir };
  if (onPostgres()) {
    const db = await freshPostgres(process.env.TEST_DATABASE_URL!);
    dropDatabase = db.close;
    env = { ...env, DATABASE_URL: db.url, ECPDS_SECRET_KEY: Buffer.alloc(32, 5).toString('base64') };
  }
  // An incoming user with a destination, made before the server holds the database.
  const runtime = await openRuntime(parseConfig(env), { info() {}, warn() {}, error() {} }, { hold: false });
  try {
    await runtime.handle.db.insert(destinations).values({ name: 'DEST', countryIso: 'gb', type: 1 });
    const user = { email: 'alice@example.org', iso: 'gb', active: true, passwordSealed: null, lastLoginDate: null };
    await runtime.ports.repos.incomingUsers.insert(
      { id: 'alice', portalService: 'standard-login', ...user },
      new Date(),
    );
    await runtime.ports.repos.incomingUsers.addAssociation('alice', 'DEST');
  } finally {
    await runtime.close();
  }
  sftpPort = await freePort();
  server = startServer({
    ...env,
    PORT: String(await freePort()),
    ECPDS_PORTAL_SFTP_PORT: String(sftpPort),
    ECPDS_PORTAL_RECHECK_MS: '600000',
  });
  await server.ready;
});

afterAll(async () => {
  await killAll();
  await dropDatabase();
  removeTempDirs();
});

const sftpArgs = () => [
  '-P',
  String(sftpPort),
  '-i',
  key,
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

/** `sftp -b <file>` with the key, to its end (not spawnSync: the server's output is read meanwhile). */
function sftpBatch(commands: string[]) {
  const batch = path.join(work, `batch-${Math.random().toString(36).slice(2)}`);
  fs.writeFileSync(batch, `${commands.join('\n')}\n`);
  return new Promise<{ status: number | null; stderr: string }>((resolve) => {
    const child = spawn('sftp', [...sftpArgs(), '-b', batch, 'alice@127.0.0.1'], { cwd: work });
    let stderr = '';
    child.stdout.resume();
    child.stderr.setEncoding('utf8').on('data', (c: string) => void (stderr += c));
    child.once('close', (status) => resolve({ status, stderr }));
  });
}

/**
 * An OpenSSH sftp session kept open, its batch read from a pipe: `step` sends a command, then a local
 * `!echo` whose line marks that the command was answered; its output (stderr with stdout) is answered.
 */
function sftpSession() {
  const child: ChildProcess = spawn(
    'sh',
    ['-c', 'exec sftp "$@" 2>&1', 'sh', ...sftpArgs(), '-b', '-', 'alice@127.0.0.1'],
    {
      cwd: work,
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  let output = '';
  let marks = 0;
  let ended = false;
  let wake = () => {};
  // Made and awaited in the same turn as the check before it: no output can come in between.
  const changed = () => new Promise<void>((resolve) => void (wake = resolve));
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
    wake();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void exited.then(() => {
    ended = true;
    wake();
  });
  return {
    exited,
    output: () => output,
    async step(command: string) {
      const mark = new RegExp(`^mark-${++marks}$`, 'm');
      const from = output.length;
      child.stdin!.write(`${command}\n!echo mark-${marks}\n`);
      while (!mark.test(output.slice(from)) && !ended) await changed();
      if (!mark.test(output.slice(from))) throw new Error(`sftp ended before '${command}' was answered:\n${output}`);
      return output.slice(from);
    },
    /** Sends a command and waits for the session to end. */
    async last(command: string) {
      child.stdin!.write(`${command}\n`);
      return exited;
    },
  };
}

describe('ecpds-edge incoming while the server runs', needs('sftp', 'ssh-keygen'), () => {
  it('adds a key and grants put; an SFTP login with that key lists and uploads', async () => {
    const added = await cli('incoming', 'key', 'alice', 'add', keyLine);
    expect([added.status, added.stdout, added.stderr]).toEqual([
      0,
      `Key ${fingerprint} (ssh-ed25519) added to 'alice'.\n`,
      '',
    ]);
    const granted = await cli('incoming', 'permission', 'alice', 'grant', 'put');
    expect([granted.status, granted.stdout, granted.stderr]).toEqual([
      0,
      "Portal permissions of 'alice': dir, get, mtime, size, put.\n",
      '',
    ]);
    const session = await sftpBatch(['ls /DEST', 'put up.txt /DEST/up.txt']);
    expect(session.status, session.stderr).toBe(0);
  });

  it('changes what a live session may do at its next request, and a key removed ends it', onlyEmbedded, async () => {
    const session = sftpSession();
    expect(await session.step('ls /DEST')).toMatch(/up\.txt/);

    const revoked = await cli('incoming', 'permission', 'alice', 'revoke', 'put');
    expect([revoked.status, revoked.stderr]).toEqual([0, '']);
    expect(await session.step('-put up.txt /DEST/again.txt')).toMatch(/Permission denied/);
    const granted = await cli('incoming', 'permission', 'alice', 'grant', 'put');
    expect([granted.status, granted.stderr]).toEqual([0, '']);
    expect(await session.step('put up.txt /DEST/again.txt')).not.toMatch(/denied|failure/i);

    const removed = await cli('incoming', 'key', 'alice', 'remove', fingerprint);
    expect([removed.status, removed.stdout, removed.stderr]).toEqual([
      0,
      `Key ${fingerprint} removed from 'alice'.\n`,
      '',
    ]);
    // The session opened with that key ends at its next request: the server closes the connection.
    expect(await session.last('ls /DEST')).not.toBe(0);
    expect(session.output()).toMatch(/Connection closed|disconnect/i);
    // And a new login with it is refused.
    const again = await sftpBatch(['ls /DEST']);
    expect(again.status).not.toBe(0);
    expect(again.stderr).toMatch(/Permission denied \(publickey/);
    expect((await cli('incoming', 'key', 'alice', 'add', keyLine)).status).toBe(0);
  });

  it('keeps the channel to the user the server runs as', onlyEmbedded, async () => {
    const cliDir = path.join(dataDir, 'cli');
    expect(fs.statSync(cliDir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(cliDir, 'token')).mode & 0o777).toBe(0o600);
    const socket = fs.statSync(path.join(cliDir, 'socket'));
    expect([socket.isSocket(), socket.mode & 0o777]).toEqual([true, 0o600]);

    // Without the token (or with another command than `incoming`), nothing is run.
    const token = fs.readFileSync(path.join(cliDir, 'token'), 'utf8').trim();
    const ask = (request: object) =>
      new Promise<string>((resolve, reject) => {
        let answer = '';
        const s = net.connect(path.join(cliDir, 'socket'), () => s.write(`${JSON.stringify(request)}\n`));
        s.setEncoding('utf8').on('data', (c: string) => void (answer += c));
        s.on('close', () => resolve(answer)).on('error', reject);
      });
    const grantDelete = ['incoming', 'permission', 'alice', 'grant', 'delete'];
    expect(await ask({ version: VERSION, token: 'x'.repeat(43), argv: grantDelete })).toBe(
      '{"stderr":"ecpds-edge: the running server refused the command\\n"}\n{"exit":1}\n',
    );
    expect(await ask({ version: VERSION, token, argv: ['client', 'create', 'mallory'] })).toBe(
      '{"stderr":"ecpds-edge: the running server takes only ' +
        '`ecpds-edge incoming|destination|transfer|host|webuser` commands\\n"}\n{"exit":1}\n',
    );
    expect(JSON.parse((await cli('incoming', 'permission', 'alice')).stdout)).not.toContain('delete');
    expect(server.output()).not.toContain(token);

    // Another user of the machine can neither reach the socket nor read the token, even with the data
    // dir open to all: only a process running as root can show it.
    if (process.getuid?.() === 0) {
      fs.chmodSync(dir, 0o755);
      fs.chmodSync(dataDir, 0o755);
      const probe =
        `const fs = require('fs'); const p = ${JSON.stringify(cliDir)};` +
        "try { fs.readFileSync(p + '/token'); console.log('read'); } catch (e) { console.log(e.code); }" +
        "require('net').connect(p + '/socket').on('connect', () => { console.log('connected'); process.exit(); })" +
        ".on('error', (e) => console.log(e.code));";
      const other = spawnSync(process.execPath, ['-e', probe], { uid: 65534, gid: 65534, encoding: 'utf8' });
      expect(other.stdout).toBe('EACCES\nEACCES\n');
    }
  });

  it('leaves the other commands on the database to a stopped server, saying so', onlyEmbedded, async () => {
    const r = await cli('client', 'list');
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^ecpds-edge: the embedded database in .* is in use by a running server \(pid \d+\)/);
  });

  it("runs the operators' commands on destinations, transfers and hosts in the server", onlyEmbedded, async () => {
    const started = await cli('destination', 'start', 'DEST');
    expect(started).toMatchObject({ status: 0, stdout: "Destination 'DEST' is now WAIT.\n", stderr: '' });
    const missing = await cli('destination', 'hold', 'NOWHERE');
    expect(missing).toMatchObject({ status: 1, stdout: '', stderr: 'ecpds-edge: Destination NOWHERE not found\n' });
    // The upload of the first test.
    const listed = JSON.parse((await cli('transfer', 'list', '--destination', 'DEST')).stdout) as Array<object>;
    expect(listed).toContainEqual(expect.objectContaining({ destination: 'DEST', target: 'up.txt' }));
    expect((await cli('host', 'output', '999')).stderr).toMatch(/^ecpds-edge: .*999/);
    // The server logs each command it ran by name. Its log is written in batches and read from its stdout,
    // so the last line may come after the command's answer: it is waited for.
    const ran = () =>
      server
        .logs()
        .filter((l) => l.msg === 'command from the command line')
        .map((l) => l.command);
    await expect
      .poll(ran, { timeout: scaled(10_000) })
      .toEqual(expect.arrayContaining(['destination start', 'destination hold', 'transfer list', 'host output']));
  });

  it('prints what a direct run prints, with its exit code', async () => {
    const commands = [
      ['incoming', 'permission', 'alice'],
      ['incoming', 'permission', 'ghost', 'grant', 'put'],
      ['incoming', 'option', 'alice'],
      ['incoming', 'option', 'alice', 'portal.maxConnections', '4'],
      ['incoming', 'option', 'alice', 'portal.maxConnections'],
      ['incoming', 'option', 'alice', 'portal.maxConnections', '--unset'],
      ['incoming', 'option', 'alice', 'portal.maxConnections'],
      ['incoming', 'subscriber', 'alice'],
      ['incoming', 'subscriber', 'alice', 'revoke', '99'],
      ['incoming', 'key', 'alice', 'list'],
      ['incoming', 'key', 'alice', 'add', keyLine],
      ['incoming', 'key', 'alice', 'add', 'ssh-dss AAAAB3NzaC1kc3M= x'],
      ['incoming', 'key', 'alice', 'remove', 'SHA256:nothing'],
    ];
    const results = async () => {
      const all = [];
      for (const args of commands) all.push({ args, ...(await cli(...args)) });
      return all;
    };
    const running = await results();
    expect(running[1]).toMatchObject({ status: 1, stderr: 'ecpds-edge: Incoming user ghost not found\n' });
    expect(running[4]).toMatchObject({ status: 0, stdout: '4\n' });
    expect(running[6]!.status).toBe(1);
    expect(await server.stop(15_000)).toBe(true);
    // Stopped, the server leaves no socket nor token; the commands run on the database directly.
    const cliDir = path.join(dataDir, 'cli');
    expect(embedded ? fs.readdirSync(cliDir) : fs.existsSync(cliDir)).toEqual(embedded ? [] : false);
    expect(await results()).toEqual(running);

    // The server's log named the commands it ran, never their arguments (a key, a password).
    const ran = server.logs().filter((l) => l.msg === 'command from the command line');
    // 7 in the tests before the last (the key, the permissions, the list after the refusals), 4 in the last,
    // then these.
    expect(ran.length).toBe(embedded ? 7 + 4 + commands.length : 0);
    expect(new Set(ran.map((l) => l.command))).toEqual(
      new Set(
        embedded
          ? [
              'incoming key',
              'incoming permission',
              'incoming option',
              'incoming subscriber',
              'destination start',
              'destination hold',
              'transfer list',
              'host output',
            ]
          : [],
      ),
    );
    expect(server.output()).not.toContain(keyLine.split(' ')[1]!);
    expect(server.logs().filter((l) => l.msg.startsWith('no command socket'))).toEqual([]);
    const refusals = server.logs().filter((l) => l.msg === 'command from the command line refused');
    expect(refusals.map((l) => l.reason)).toEqual(embedded ? ['wrong token', 'not a command it takes'] : []);
  });
});
