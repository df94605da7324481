import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../processes.ts';

/**
 * A real OpenSSH server for the SFTP method's tests and benchmark: its own configuration, host
 * key, authorized keys and pid file in a temporary directory, never the system's. It serves SFTP
 * only (internal-sftp), to one local test user, on 127.0.0.1 and a port of its own.
 */

export const SSHD = '/usr/sbin/sshd';
export const TEST_USER = 'ecpdstest';

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
  stop(): Promise<void>;
}

/** Why the real-sshd suites cannot run here, or null when they can. */
export function sshdMissing(): string | null {
  if (!fs.existsSync(SSHD)) return `${SSHD} is not installed (Debian: apt-get install openssh-server)`;
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

export async function startSshd(): Promise<Sshd> {
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
      'Subsystem sftp internal-sftp',
      'ForceCommand internal-sftp',
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
