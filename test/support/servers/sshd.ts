import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../processes.ts';
import { requireTools } from '../tools.ts';

/**
 * A real OpenSSH server for the SFTP method's tests and benchmark: its own configuration, host
 * key, authorized keys and pid file in a temporary directory, never the system's. It serves SFTP
 * only (internal-sftp), to one local test user, on 127.0.0.1 and a port of its own.
 */

export const SSHD = '/usr/sbin/sshd';
export const TEST_USER = 'ecpdstest';
const SFTP_SERVER = '/usr/lib/openssh/sftp-server';

export interface Sshd {
  port: number;
  user: string;
  password: string;
  /** OpenSSH PEM text of an ed25519 key authorized for the user. */
  privateKey: string;
  privateKeyFile: string;
  /** The user's home: SFTP paths without a leading slash are relative to it. */
  home: string;
  /** A fresh directory under the home, writable by the user, removed by `stop`. */
  scratch(prefix?: string): string;
  /** How many logins sshd accepted so far (its own log lines). */
  accepted(): number;
  /** Everything sshd logged. */
  log(): string;
  /** With `logFiles`: the files opened for writing, in the order sshd logged their opens and closes. */
  openWrites(): WriteSpan[];
  /** With `logFiles`: the SFTP sessions (one sftp-server process each), as they were logged opening and closing. */
  sessions(): SessionSpan[];
  /** With `logFiles`: what each session did to files, in the order sftp-server logged it. */
  fileOperations(): FileOperation[];
  stop(): Promise<void>;
}

/** Why the real-sshd suites cannot run here, or null when they can. */
export function sshdMissing(): string | null {
  const missing = requireTools('sshd');
  if (missing) return missing;
  if (process.getuid?.() !== 0) return 'the sshd tests create a local user and need root';
  return null;
}

function run(command: string, args: string[], input?: string) {
  return execFileSync(command, args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}

/**
 * The test user's password: random, kept in a root-only file so that concurrent runs (a test file
 * and the benchmark) agree on it; chpasswd is needed because, without PAM, sshd reads /etc/shadow.
 */
function ensureUser(): { password: string; home: string; uid: number; gid: number } {
  const lookup = () => run('getent', ['passwd', TEST_USER]).trim();
  let entry: string;
  try {
    entry = lookup();
  } catch {
    // No shell: the account can only reach the forced internal-sftp of the servers started here.
    run('useradd', ['-m', '-s', '/usr/sbin/nologin', TEST_USER]);
    entry = lookup();
  }
  const fields = entry.split(':');
  const secret = path.join(os.tmpdir(), `${TEST_USER}-password`);
  try {
    fs.writeFileSync(secret, randomBytes(18).toString('base64url'), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const password = fs.readFileSync(secret, 'utf8').trim();
  run('chpasswd', [], `${TEST_USER}:${password}\n`);
  return { password, home: fields[5]!, uid: Number(fields[2]), gid: Number(fields[3]) };
}

/**
 * `logFiles`: sftp-server logs each file opened, closed, renamed and removed (`-l INFO`), which
 * `openWrites` and `fileOperations` read: what the server itself saw, for the tests of the engine's
 * limits and of one writer per file. `logWrites` adds each write request (`-l DEBUG1`).
 */
export async function startSshd(
  options: { logFiles?: boolean; logWrites?: boolean; exec?: boolean } = {},
): Promise<Sshd> {
  const missing = sshdMissing();
  if (missing) throw new Error(`Cannot start sshd: ${missing}`);
  const { password, home, uid, gid } = ensureUser();
  // The privilege separation directory sshd insists on.
  fs.mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-sshd-'));
  // sshd reads the authorized keys as the user.
  fs.chmodSync(dir, 0o755);
  const hostKey = path.join(dir, 'host_ed25519');
  const clientKey = path.join(dir, 'client_ed25519');
  run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'ecpds-test-host', '-f', hostKey]);
  run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'ecpds-test-client', '-f', clientKey]);
  const authorized = path.join(dir, 'authorized_keys');
  fs.copyFileSync(`${clientKey}.pub`, authorized);
  fs.chmodSync(authorized, 0o644);

  // internal-sftp logs to syslog only: with `logFiles`, the external sftp-server logs to a file of
  // our own, each line behind the pid of its session (to pair a session's end with its open files).
  const fileLog = path.join(dir, 'sftp-files.log');
  let sftpServer = 'internal-sftp';
  const logFiles = options.logFiles || options.logWrites;
  if (logFiles) {
    fs.writeFileSync(fileLog, '', { mode: 0o666 });
    fs.chmodSync(fileLog, 0o666);
    sftpServer = path.join(dir, 'sftp-logged');
    const level = options.logWrites ? 'DEBUG1' : 'INFO';
    const logged = `${SFTP_SERVER} -e -l ${level} 2>&1 1>&3 3>&- | sed -u "s/^/$$ /" >> ${fileLog}`;
    fs.writeFileSync(sftpServer, `#!/bin/sh\n{ ${logged}; } 3>&1\n`, { mode: 0o755 });
    // A forced command other than internal-sftp runs through the user's shell.
    run('usermod', ['-s', '/bin/sh', TEST_USER]);
  }
  // `exec`: commands on exec channels run through the user's shell (sftp.execCmd), not the forced sftp server.
  if (options.exec) run('usermod', ['-s', '/bin/sh', TEST_USER]);

  const port = await freePort();
  const config = path.join(dir, 'sshd_config');
  fs.writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `PidFile ${path.join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${authorized}`,
      'PasswordAuthentication yes',
      'PubkeyAuthentication yes',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'PermitRootLogin no',
      `AllowUsers ${TEST_USER}`,
      `Subsystem sftp ${sftpServer}`,
      options.exec ? '' : `ForceCommand ${sftpServer}`,
      // The benchmark opens a burst of connections at once.
      'MaxStartups 64:30:128',
      'LogLevel INFO',
      '',
    ].join('\n'),
  );

  const child: ChildProcess = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr!.setEncoding('utf8');
  const listening = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sshd did not start:\n${output}`)), 10_000);
    child.stderr!.on('data', (text: string) => {
      output += text;
      if (/Server listening on/.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`sshd exited (${code}) before listening:\n${output}`));
    });
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await listening;
  } catch (error) {
    child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  const scratches: string[] = [];
  return {
    port,
    user: TEST_USER,
    password,
    privateKey: fs.readFileSync(clientKey, 'utf8'),
    privateKeyFile: clientKey,
    home,
    scratch(prefix = 'sftp-') {
      const made = fs.mkdtempSync(path.join(home, prefix));
      fs.chownSync(made, uid, gid);
      scratches.push(made);
      return made;
    },
    accepted: () => output.match(/Accepted \S+ for /g)?.length ?? 0,
    log: () => output,
    openWrites: () => writeSpans(fileOperationsIn(logFiles ? fs.readFileSync(fileLog, 'utf8') : '')),
    fileOperations: () => fileOperationsIn(logFiles ? fs.readFileSync(fileLog, 'utf8') : ''),
    sessions: () => sessionSpans(logFiles ? fs.readFileSync(fileLog, 'utf8') : ''),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      for (const made of scratches.splice(0)) fs.rmSync(made, { recursive: true, force: true });
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface WriteSpan {
  path: string;
  /** The sftp session (the pid of its server process) that wrote it. */
  session: string;
  /** Positions in sshd's log: every file operation is numbered in the order it was logged. */
  opened: number;
  closed: number | null;
  /** With `logWrites`: the position of its last write request, or null before any. */
  lastWrite: number | null;
}

export interface FileOperation {
  /** The pid of the session's server process. */
  session: string;
  position: number;
  kind: 'open' | 'write' | 'close' | 'rename' | 'remove' | 'session closed';
  /** The file (a rename's old name); empty for the end of a session. */
  path: string;
  /** A rename's new name. */
  to?: string;
  /** An open's flags (`WRITE,CREATE,TRUNCATE`), a write's offset and length. */
  detail?: string;
  /**
   * The error sftp-server answered (`No such file`): it logs a request before carrying it out, and
   * a failure right after, so a rename logged may not have happened.
   */
  failed?: string;
}

const OPERATIONS: Array<[FileOperation['kind'], RegExp]> = [
  ['open', /\bopen "(.+)" flags (\S+)/],
  ['write', /\bwrite "(.+)" \(handle \d+\) (off \d+ len \d+)/],
  ['close', /\bclose "(.+)" bytes/],
  ['rename', /\brename old "(.+)" new "(.+)"/],
  ['remove', /\bremove name "(.+)"/],
  ['session closed', /session closed()/],
];

/** sftp-server's log lines, each behind its session's pid, as operations in the order logged. */
function fileOperationsIn(log: string): FileOperation[] {
  const operations: FileOperation[] = [];
  // By session: the operation its previous line logged, which a `sent status` line right after answers.
  const previous = new Map<string, FileOperation | undefined>();
  for (const line of log.split('\n')) {
    const session = /^(\d+) /.exec(line)?.[1];
    if (!session) continue;
    const answered = previous.get(session);
    previous.set(session, undefined);
    const failure = /\bsent status (.+)$/.exec(line)?.[1];
    if (failure !== undefined) {
      if (answered) answered.failed = failure;
      continue;
    }
    for (const [kind, pattern] of OPERATIONS) {
      const m = pattern.exec(line);
      if (!m) continue;
      const position = operations.length + 1;
      const operation: FileOperation =
        kind === 'rename'
          ? { session, position, kind, path: m[1]!, to: m[2]! }
          : { session, position, kind, path: m[1] ?? '', ...(m[2] ? { detail: m[2] } : {}) };
      operations.push(operation);
      previous.set(session, operation);
      break;
    }
  }
  return operations;
}

/**
 * Opens for writing paired with their closes, per session and path; a session that ends closes
 * what it still had open.
 */
function writeSpans(operations: FileOperation[]): WriteSpan[] {
  const spans: WriteSpan[] = [];
  const open = new Map<string, WriteSpan[]>();
  for (const op of operations) {
    const ofSession = open.get(op.session) ?? [];
    open.set(op.session, ofSession);
    if (op.kind === 'open' && op.detail?.includes('WRITE')) {
      const span = { path: op.path, session: op.session, opened: op.position, closed: null, lastWrite: null };
      spans.push(span);
      ofSession.push(span);
    } else if (op.kind === 'write') {
      const span = ofSession.find((s) => s.path === op.path);
      if (span) span.lastWrite = op.position;
    } else if (op.kind === 'close') {
      const at = ofSession.findIndex((s) => s.path === op.path);
      if (at >= 0) ofSession.splice(at, 1)[0]!.closed = op.position;
    } else if (op.kind === 'session closed') {
      for (const span of ofSession.splice(0)) span.closed = op.position;
    }
  }
  return spans;
}

export interface SessionSpan {
  pid: string;
  /** Positions in sftp-server's log: its `session opened` and `session closed` lines, numbered in order. */
  opened: number;
  closed: number | null;
}

/** sftp-server's `session opened` and `session closed` lines, paired by the pid of the session. */
function sessionSpans(log: string): SessionSpan[] {
  const spans = new Map<string, SessionSpan>();
  let position = 0;
  for (const line of log.split('\n')) {
    const session = /^(\d+) .*\bsession (opened|closed) for local user/.exec(line);
    if (!session) continue;
    const pid = session[1]!;
    if (session[2] === 'opened') spans.set(pid, { pid, opened: ++position, closed: null });
    else {
      const span = spans.get(pid);
      if (span) span.closed = ++position;
    }
  }
  return [...spans.values()];
}

/** The most spans open at once among those `which` selects (all by default). */
export function mostOpenAtOnce<S extends { opened: number; closed: number | null }>(
  spans: S[],
  which: (span: S) => boolean = () => true,
) {
  const events = spans
    .filter(which)
    .flatMap((s) => [
      [s.opened, 1],
      [s.closed ?? Number.POSITIVE_INFINITY, -1],
    ])
    .sort((a, b) => a[0]! - b[0]!);
  let now = 0;
  let most = 0;
  for (const [, change] of events) most = Math.max(most, (now += change!));
  return most;
}
