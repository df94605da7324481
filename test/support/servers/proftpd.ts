import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../processes.ts';
import { scaled } from '../time.ts';
import { requireTools } from '../tools.ts';

export const PROFTPD = '/usr/sbin/proftpd';
const SYSTEM_USER = 'ecpdsftp';

/**
 * Whether the suite can run (ProFTPD with its TLS module, and openssl for the user's password
 * hash); a machine without them skips it, and the run's summary names them (CI fails on it).
 */
export function proftpdAvailability(): { run: boolean; reason: string } {
  const reason = requireTools('proftpd', 'openssl');
  return reason ? { run: false, reason } : { run: true, reason: '' };
}

export interface Proftpd {
  /** Plain FTP and explicit TLS (AUTH TLS). */
  port: number;
  /** Implicit TLS from the first byte. */
  tlsPort: number;
  user: string;
  password: string;
  /** The user's home (its `/`), as this process sees it. */
  root: string;
  /** Writes a file under `root` as if uploaded: directories and file owned by the server's user. */
  plant(file: string, content: string | Uint8Array): void;
  /** The server's own log, to explain a failure. */
  log(): string;
  stop(): Promise<void>;
}

/** Runs as the unprivileged system user when started as root (ProFTPD will not serve uid 0). */
function serverIds(): {
  uid: number;
  gid: number;
  group: string;
  asRoot: boolean;
} {
  if (process.getuid?.() !== 0)
    return {
      uid: process.getuid!(),
      gid: process.getgid!(),
      group: '',
      asRoot: false,
    };
  try {
    execFileSync('id', ['-u', SYSTEM_USER], { stdio: 'ignore' });
  } catch {
    execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', SYSTEM_USER]);
  }
  const id = (flag: string) => execFileSync('id', [flag, SYSTEM_USER], { encoding: 'utf8' }).trim();
  return {
    uid: Number(id('-u')),
    gid: Number(id('-g')),
    group: id('-gn'),
    asRoot: true,
  };
}

/** A passive range of our own, away from other suites' ephemeral ports; ProFTPD falls back when it is busy. */
function passiveRange(): [number, number] {
  const low = 30_000 + ((process.pid * 211) % 200) * 100;
  return [low, low + 99];
}

function config(dir: string, o: { port: number; tlsPort: number; group: string; asRoot: boolean }) {
  const [low, high] = passiveRange();
  const tls = (implicit: boolean) => `
  TLSEngine on
  TLSLog ${dir}/tls.log
  TLSProtocol TLSv1.2 TLSv1.3
  TLSRSACertificateFile ${dir}/cert.pem
  TLSRSACertificateKeyFile ${dir}/key.pem
  TLSRequired off
  TLSVerifyClient off
  TLSOptions NoSessionReuseRequired${implicit ? ' UseImplicitSSL' : ''}`;
  return `
ServerType standalone
ServerName "ecpds test"
DefaultServer on
DefaultAddress 127.0.0.1
SocketBindTight on
Port ${o.port}
${o.asRoot ? `User ${SYSTEM_USER}\nGroup ${o.group}` : ''}
PidFile ${dir}/proftpd.pid
ScoreboardFile ${dir}/scoreboard
SystemLog ${dir}/system.log
TransferLog ${dir}/xfer.log
WtmpLog off
UseReverseDNS off
DelayEngine off
MaxInstances 200
ModulePath /usr/lib/proftpd
LoadModule mod_tls.c
<Global>
  AuthOrder mod_auth_file.c
  AuthUserFile ${dir}/passwd
  AuthGroupFile ${dir}/group
  RequireValidShell off
  UseFtpUsers off
  DefaultRoot ~
  AllowOverwrite on
  Umask 022
  PassivePorts ${low} ${high}
  TimeoutIdle 600
</Global>
${tls(false)}
<VirtualHost 127.0.0.1>
  Port ${o.tlsPort}
  ${tls(true)}
</VirtualHost>
`;
}

function waitForListening(port: number, exited: () => boolean, log: () => string, withinMs = 10_000) {
  const deadline = Date.now() + scaled(withinMs);
  return new Promise<void>((resolve, reject) => {
    const attempt = () => {
      if (exited()) return reject(new Error(`proftpd exited:\n${log()}`));
      if (Date.now() > deadline) return reject(new Error(`proftpd not listening on ${port}:\n${log()}`));
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => setTimeout(attempt, 50));
    };
    attempt();
  });
}

/**
 * Starts ProFTPD in the foreground on 127.0.0.1 with a configuration, user and certificate of its
 * own in a temporary directory (never the system's): one virtual user whose home is `root`.
 */
export async function startProftpd(): Promise<Proftpd> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-proftpd-'));
  fs.chmodSync(dir, 0o755);
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  const ids = serverIds();
  fs.chownSync(root, ids.uid, ids.gid);
  const user = 'ecpds';
  const password = `pw-${process.pid}-${Date.now()}`;
  const hash = execFileSync('openssl', ['passwd', '-6', '-stdin'], {
    input: password,
    encoding: 'utf8',
  }).trim();
  fs.writeFileSync(path.join(dir, 'passwd'), `${user}:${hash}:${ids.uid}:${ids.gid}::${root}:/bin/false\n`, {
    mode: 0o600,
  });
  fs.writeFileSync(path.join(dir, 'group'), `ecpds:x:${ids.gid}:\n`, {
    mode: 0o600,
  });
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=localhost'],
      ...['-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')],
    ],
    { stdio: 'ignore' },
  );
  const port = await freePort();
  const tlsPort = await freePort();
  const conf = path.join(dir, 'proftpd.conf');
  fs.writeFileSync(conf, config(dir, { port, tlsPort, ...ids }));

  let output = '';
  let exited = false;
  // Its own process group, so that stopping it also ends the sessions it forked.
  const child: ChildProcess = spawn(PROFTPD, ['-n', '-q', '-c', conf], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdout!.setEncoding('utf8').on('data', (c: string) => void (output += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => void (output += c));
  const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void done.then(() => void (exited = true));
  const log = () => {
    const system = path.join(dir, 'system.log');
    return output + (fs.existsSync(system) ? fs.readFileSync(system, 'utf8') : '');
  };
  const stop = async () => {
    if (!exited) {
      process.kill(-child.pid!, 'SIGTERM');
      const late = setTimeout(() => !exited && process.kill(-child.pid!, 'SIGKILL'), 5_000);
      await done;
      clearTimeout(late);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForListening(port, () => exited, log);
    await waitForListening(tlsPort, () => exited, log);
  } catch (error) {
    await stop();
    throw error;
  }
  const plant = (file: string, content: string | Uint8Array) => {
    const parts = path.normalize(file).split(path.sep);
    for (let i = 1; i < parts.length; i++) {
      const dirPath = path.join(root, ...parts.slice(0, i));
      if (!fs.existsSync(dirPath)) fs.mkdirSync(dirPath);
      fs.chownSync(dirPath, ids.uid, ids.gid);
    }
    fs.writeFileSync(path.join(root, file), content);
    fs.chownSync(path.join(root, file), ids.uid, ids.gid);
  };
  return { port, tlsPort, user, password, root, plant, log, stop };
}
